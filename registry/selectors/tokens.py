"""API tokens as requests, the console and the CLI read them (never the secret: only its hash is
stored)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from registry.errors import NotFound
from registry.models import ApiToken, RegistryState
from registry.readmodel.generation import heard_changes
from registry.readmodel.memo import GenerationMemo
from registry.roles import roles_of, scopes_of, token_access


@dataclasses.dataclass
class TokenGrant:
    """What a live (unrevoked) token may do: the one answer every bearer request is checked by."""

    token_id: int
    user_id: int
    scopes: frozenset[str]  # the token's scopes that its owner's role still grants
    user_active: bool
    last_used_at: dt.datetime | None  # moved on by the caller that records a use


def _grant_sql(*, with_generation: bool) -> str:
    """One query for the token, its owner's is_active and roles (the owner's group names, joined
    with commas: role names have none) and, optionally, the registry generation."""
    token = ApiToken._meta.db_table
    user_model: Any = ApiToken._meta.get_field("user").related_model
    user = user_model._meta.db_table
    active = user_model._meta.get_field("is_active").column
    superuser = user_model._meta.get_field("is_superuser").column
    groups = user_model._meta.get_field("groups")
    membership = groups.remote_field.through._meta.db_table
    group = groups.related_model._meta.db_table
    join = "STRING_AGG(g.name, ',')" if connection.vendor == "postgresql" else "GROUP_CONCAT(g.name, ',')"
    group_names = (
        f"(SELECT {join} FROM {membership} m INNER JOIN {group} g ON g.id = m.{groups.m2m_reverse_name()} "
        f"WHERE m.{groups.m2m_column_name()} = u.id)"
    )
    generation = f", (SELECT s.generation FROM {RegistryState._meta.db_table} s WHERE s.id = 1)"
    return (
        f"SELECT t.id, t.user_id, t.scopes, t.last_used_at, u.{active}, u.{superuser}, {group_names}"
        f"{generation if with_generation else ''} "
        f"FROM {token} t INNER JOIN {user} u ON u.id = t.user_id "
        f"WHERE t.secret_hash = %s AND t.revoked_at IS NULL"
    )


_GRANT_SQL: dict[tuple[str, bool], str] = {}


def _grant_query(secret_hash: str, *, with_generation: bool) -> tuple[TokenGrant, int | None] | None:
    key = (connection.vendor, with_generation)
    if key not in _GRANT_SQL:
        _GRANT_SQL[key] = _grant_sql(with_generation=with_generation)
    with connection.cursor() as cursor:
        cursor.execute(_GRANT_SQL[key], [secret_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, user_id, scopes, last_used_at, is_active, is_superuser, group_names = row[:7]
    if isinstance(scopes, str):  # SQLite, and PostgreSQL jsonb through a raw cursor
        scopes = json.loads(scopes)
    roles = roles_of(is_superuser=bool(is_superuser), group_names=(group_names or "").split(","))
    if isinstance(last_used_at, str):  # SQLite returns naive UTC text from a raw cursor
        last_used_at = parse_datetime(last_used_at)
    if last_used_at is not None and timezone.is_naive(last_used_at):
        last_used_at = timezone.make_aware(last_used_at, dt.UTC)
    grant = TokenGrant(
        token_id=token_id,
        user_id=user_id,
        scopes=frozenset(set(scopes or ()) & scopes_of(roles)),
        user_active=bool(is_active),
        last_used_at=last_used_at,
    )
    return grant, (row[7] if with_generation else None)


# Grants by secret hash, keyed by the token epoch: any token, user or role change heard moves the
# epoch on, so no grant outlives the change.
_GRANTS: GenerationMemo[TokenGrant] = GenerationMemo(maxsize=10_000)


def api_token_grant(*, secret_hash: str) -> tuple[TokenGrant, int] | None:
    """The grant of the live token with this secret hash, and the registry generation current as
    it was read; None when no live token has it.

    Bearer requests are checked on every call, SKILL.md reads most of all, so this costs no query
    while the process hears changes (readmodel/generation.py): the grant comes from this process's
    cache. Where it cannot listen (SQLite, inside a transaction, REGISTRY_LISTEN off) one query
    reads the token and the generation together."""
    heard = heard_changes()
    if heard is None:
        found = _grant_query(secret_hash, with_generation=True)
        return None if found is None else (found[0], int(found[1] or 0))
    generation, epoch = heard
    grant = _GRANTS.get((epoch, secret_hash))
    if grant is None:
        found = _grant_query(secret_hash, with_generation=False)
        if found is None:
            return None
        grant = found[0]
        # `epoch` was read before the query, so a change heard since then keeps this grant out.
        _GRANTS.put((epoch, secret_hash), grant)
    return grant, generation


# Tokens with their owners by id, keyed by the token epoch as grants are: DRF's requests need the
# user object, and reading it per request would cost what the rest of a resolve does.
_OWNED: GenerationMemo[ApiToken] = GenerationMemo(maxsize=10_000)


def api_token_with_owner(*, token_id: int) -> ApiToken | None:
    """The token and its user, for a request a grant let through (None if deleted since). Kept
    per process while it hears changes, as `api_token_grant` keeps grants."""
    heard = heard_changes()
    if heard is None:
        return ApiToken.objects.select_related("user").filter(pk=token_id).first()
    _, epoch = heard
    token = _OWNED.get((epoch, token_id))
    if token is None:
        token = ApiToken.objects.select_related("user").filter(pk=token_id).first()
        if token is not None:
            _OWNED.put((epoch, token_id), token)
    return token


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
