"""API tokens as the console and the CLI read them (never the secret: only its hash is stored)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import Group
from django.db.models import Prefetch, QuerySet

from registry.errors import NotFound
from registry.models import ApiToken
from registry.roles import roles_of, scopes_of, token_access


def api_token_for_secret(secret: str) -> ApiToken | None:
    """The live (unrevoked) token whose secret this is, with its user."""
    return (
        ApiToken.objects.select_related("user")
        .filter(secret_hash=ApiToken.hash_secret(secret), revoked_at__isnull=True)
        .first()
    )


def api_token_list() -> list[ApiToken]:
    """Every token with its owner, by name; revoked ones too (they stay for the audit trail)."""
    return list(ApiToken.objects.select_related("user").order_by("name"))


@dataclass(frozen=True)
class TokenRow:
    token: ApiToken
    owner_roles: list[str]
    # A token works with the scopes its owner's role still grants (registry/api/auth.py cuts
    # the rest on every request), so a demoted owner's extra scopes are shown as inactive.
    active_scopes: list[str]
    inactive_scopes: list[str]


def _visible_tokens(user) -> QuerySet[ApiToken]:
    tokens = ApiToken.objects.all()
    return tokens if token_access(user).see_all else tokens.filter(user=user)


def api_tokens_for_user(*, user) -> list[TokenRow]:
    """The tokens `user` may see (an admin: all; anyone else: their own), live ones first."""
    owners_groups = Prefetch("user__groups", queryset=Group.objects.only("name"))
    tokens = _visible_tokens(user).select_related("user").prefetch_related(owners_groups)
    rows = []
    for token in tokens.order_by("revoked_at", "name"):  # NULLs (live tokens) sort first
        owner = token.user
        roles = roles_of(
            is_superuser=owner.is_superuser and owner.is_active,
            group_names=[group.name for group in owner.groups.all()] if owner.is_active else [],
        )
        granted = scopes_of(roles)
        rows.append(
            TokenRow(
                token=token,
                owner_roles=sorted(roles),
                active_scopes=[scope for scope in token.scopes if scope in granted],
                inactive_scopes=[scope for scope in token.scopes if scope not in granted],
            )
        )
    return rows


def api_token_get_for_user(*, user, token_id: int) -> ApiToken:
    """The token `user` may see, or NotFound (another owner's token is not there for an author)."""
    token = _visible_tokens(user).select_related("user").filter(pk=token_id).first()
    if token is None:
        raise NotFound(f"No token with id {token_id}.")
    return token
