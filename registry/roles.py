"""Roles (SPEC §3) as Django groups, and the scopes each role grants in the console."""

from __future__ import annotations

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


def user_roles(user) -> set[str]:
    if not (user and user.is_authenticated and user.is_active):
        return set()
    if user.is_superuser:
        return {ADMIN}
    return set(user.groups.values_list("name", flat=True)) & set(ROLE_SCOPES)


def user_has_scope(user, scope: str) -> bool:
    return any(scope in ROLE_SCOPES[role] for role in user_roles(user))
