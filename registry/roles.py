"""Roles (SPEC §3) as Django groups, and the scopes each role grants.

A role bounds everything its user does: console pages, and every API token the user owns (a
token's scopes are cut to its owner's role when it is created and again on every request, so a
user who loses a role loses it over the API at once)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from registry.models import TokenScope

ADMIN, AUTHOR, ANALYST = "admin", "author", "analyst"

ROLE_SCOPES: dict[str, set[str]] = {
    ADMIN: {scope.value for scope in TokenScope},
    AUTHOR: {
        TokenScope.SKILLS_READ,
        TokenScope.SKILLS_WRITE,
        TokenScope.RULES_WRITE,
        TokenScope.AGENT_RUN,
        TokenScope.ANALYTICS_READ,
        TokenScope.USAGE_WRITE,
    },
    ANALYST: {TokenScope.SKILLS_READ, TokenScope.ANALYTICS_READ},
}


# Every role grants this scope, so a console view that asks for it turns away only an account
# without a role (which may do nothing).
ANY_ROLE = TokenScope.SKILLS_READ.value


def roles_of(*, is_superuser: bool, group_names: Iterable[str]) -> set[str]:
    """The roles an active account holds: a superuser is an admin; otherwise its role groups."""
    if is_superuser:
        return {ADMIN}
    return set(group_names) & set(ROLE_SCOPES)


def acting_role(roles: Iterable[str]) -> str:
    """The one role a principal acts with where a single answer is needed (a label policy's
    `roles`): the strongest it holds, "" for none. A token acts with its owner's roles; its
    scopes still bound what it may call at all."""
    held = set(roles)
    return next((role for role in (ADMIN, AUTHOR, ANALYST) if role in held), "")


def scopes_of(roles: Iterable[str]) -> set[str]:
    return {str(scope) for role in roles for scope in ROLE_SCOPES[role]}


def user_roles(user) -> set[str]:
    if not (user and user.is_authenticated and user.is_active):
        return set()
    if user.is_superuser:
        return {ADMIN}
    # Kept on the user object, which lives for one request: the access check and the template
    # context both ask, and each asking would be a query.
    cached = getattr(user, "_registry_roles", None)
    if cached is None:
        cached = roles_of(is_superuser=False, group_names=user.groups.values_list("name", flat=True))
        user._registry_roles = cached
    return set(cached)


def user_scopes(user) -> set[str]:
    return scopes_of(user_roles(user))


def user_has_scope(user, scope: str) -> bool:
    return scope in user_scopes(user)


@dataclass(frozen=True)
class TokenAccess:
    """What a user may do with API tokens in the console.

    An admin sees and manages every token, for any owner. An author creates their own (a token
    acts for its owner and never beyond the owner's role, so this grants nothing new). An
    analyst only sees their own: creating a credential is a write, and analysts write nothing;
    an admin makes them a read token when they need one. Anyone may revoke a token they can
    see: it only takes power away, and a user whose role was lowered must still be able to
    withdraw the credentials they handed out."""

    see_all: bool
    manage: bool


def token_access(user) -> TokenAccess:
    roles = user_roles(user)
    return TokenAccess(see_all=ADMIN in roles, manage=bool(roles & {ADMIN, AUTHOR}))


# Audit rows about accounts (logins, with their IP addresses; role changes) are for admins;
# every role may read who changed which skill, label, rule or token.
ADMIN_ONLY_AUDIT_OBJECTS = frozenset({"user", "group"})


def audit_sees_accounts(user) -> bool:
    return ADMIN in user_roles(user)
