"""The hot read path: raw SKILL.md for bearer-token clients, usually without touching the database.

Agents fetch SKILL.md on every turn, mostly getting 304s. Going through DRF costs an ORM query
for the token (with the user), another for the registry generation, content negotiation and
Request wrapping — several times the cost of the bytes themselves. Here the token is checked
(not revoked, user active, scopes cut to the owner's role) against a per-process cache and the generation comes from
what this process has heard (selectors/generation.py); both are dropped the moment a
notification says they changed. Where the process cannot listen (SQLite, inside a transaction,
REGISTRY_LISTEN off) one raw query checks the token *and* reads the generation. The bytes and
their ETag come from the per-process cache keyed by that generation (selectors.skill_md_raw).
Anything unusual — no bearer token, an unknown or under-scoped token, odd query parameters, a
missing skill — returns None and the normal DRF view answers (with the usual JSON errors), so
behaviour is identical and only the common case is fast.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import threading
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from registry.api import throttle
from registry.models import ApiToken, RegistryState, SkillSource
from registry.roles import roles_of, scopes_of
from registry.selectors.generation import heard_changes
from registry.services.tokens import api_token_used

_LABEL = re.compile(r"^[a-z0-9_.-]{1,36}$")
_SOURCES = frozenset(SkillSource.values)


@dataclasses.dataclass
class _TokenRow:
    id: int
    scopes: frozenset[str]
    user_active: bool
    last_used_at: dt.datetime | None


def _sql(*, with_generation: bool) -> str:
    token = ApiToken._meta.db_table
    user_model: Any = ApiToken._meta.get_field("user").related_model
    user = user_model._meta.db_table
    active = user_model._meta.get_field("is_active").column
    superuser = user_model._meta.get_field("is_superuser").column
    # The owner's role bounds the token on every request (registry/roles.py): its group names ride
    # along in the same query, joined with commas (role names have none).
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
        f"SELECT t.id, t.scopes, t.last_used_at, u.{active}, u.{superuser}, {group_names}"
        f"{generation if with_generation else ''} "
        f"FROM {token} t INNER JOIN {user} u ON u.id = t.user_id "
        f"WHERE t.secret_hash = %s AND t.revoked_at IS NULL"
    )


_SQL: dict[bool, str] = {}


def _query(secret_hash: str, *, with_generation: bool) -> tuple[_TokenRow, int | None] | None:
    if with_generation not in _SQL:
        _SQL[with_generation] = _sql(with_generation=with_generation)
    with connection.cursor() as cursor:
        cursor.execute(_SQL[with_generation], [secret_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, scopes, last_used_at, is_active, is_superuser, group_names = row[:6]
    if isinstance(scopes, str):  # SQLite, and PostgreSQL jsonb through a raw cursor
        scopes = json.loads(scopes)
    roles = roles_of(is_superuser=bool(is_superuser), group_names=(group_names or "").split(","))
    scopes = set(scopes or ()) & scopes_of(roles)
    if isinstance(last_used_at, str):  # SQLite returns naive UTC text from a raw cursor
        last_used_at = parse_datetime(last_used_at)
    if last_used_at is not None and timezone.is_naive(last_used_at):
        last_used_at = timezone.make_aware(last_used_at, dt.UTC)
    token = _TokenRow(token_id, frozenset(scopes), bool(is_active), last_used_at)
    return token, (row[6] if with_generation else None)


class _TokenCache:
    """Valid token rows by secret hash, for as long as no token, user or role change has been heard."""

    _MAX = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = -1
        self._rows: dict[str, _TokenRow] = {}

    def get(self, secret_hash: str, epoch: int) -> _TokenRow | None:
        with self._lock:
            if epoch != self._epoch:
                self._rows.clear()
                self._epoch = epoch
            return self._rows.get(secret_hash)

    def put(self, secret_hash: str, epoch: int, token: _TokenRow) -> None:
        # `epoch` was read before the query, so a change heard since then leaves this row out.
        with self._lock:
            if epoch != self._epoch:
                return
            if len(self._rows) >= self._MAX:
                self._rows.clear()
            self._rows[secret_hash] = token


_TOKENS = _TokenCache()


def bearer_generation(request, scope: str) -> int | None:
    """The registry generation when the request carries a valid bearer token with `scope`, else None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header.startswith("Bearer "):
        return None
    secret = header[7:].strip()
    if not secret:
        return None
    secret_hash = ApiToken.hash_secret(secret)
    heard = heard_changes()
    if heard is None:
        found = _query(secret_hash, with_generation=True)
        if found is None:
            return None
        token, queried = found
        generation = int(queried or 0)
    else:
        generation, epoch = heard
        cached = _TOKENS.get(secret_hash, epoch)
        if cached is None:
            found = _query(secret_hash, with_generation=False)
            if found is None:
                return None
            cached = found[0]
            _TOKENS.put(secret_hash, epoch, cached)
        token = cached
    if not token.user_active or scope not in token.scopes:
        return None
    if throttle.retry_after(throttle.token_identity(secret_hash)) is not None:
        return None  # DRF's path answers the 429 (with Retry-After)
    if api_token_used(token_id=token.id, last_used_at=token.last_used_at):
        token.last_used_at = timezone.now()
    return generation


def version_params(request) -> dict | None:
    """label/version/source from the query string when they are plainly valid, else None."""
    if not request.META.get("QUERY_STRING"):
        return {}
    params = request.GET
    if not params:
        return {}
    if any(key not in ("label", "version", "source") for key in params) or any(
        len(params.getlist(key)) > 1 for key in params
    ):
        return None
    label, version, source = params.get("label"), params.get("version"), params.get("source")
    if label is not None and not _LABEL.fullmatch(label):
        return None
    if version is not None and (not version.isdigit() or not 0 < int(version) < 2**31 or label):
        return None
    if source is not None and source not in _SOURCES:
        return None
    return {"label": label, "number": int(version) if version else None, "source": source}
