"""The hot read path: raw SKILL.md for bearer-token clients in one small SQL query.

Agents fetch SKILL.md on every turn, mostly getting 304s. Going through DRF costs an ORM query
for the token (with the user), another for the registry generation, content negotiation and
Request wrapping — several times the cost of the bytes themselves. Here one raw query checks the
token (not revoked, user active, scopes) *and* reads the generation; the bytes and their ETag
come from the per-process cache keyed by that generation (selectors.skill_md_raw), so a hit does
no ORM work at all. Anything unusual — no bearer token, an unknown or under-scoped token, odd
query parameters, a missing skill — returns None and the normal DRF view answers (with the usual
JSON errors), so behaviour is identical and only the common case is fast.
"""

from __future__ import annotations

import datetime as dt
import json
import re

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from registry.api.auth import touch_token
from registry.models import ApiToken, SkillSource

_LABEL = re.compile(r"^[a-z0-9_.-]{1,36}$")
_SOURCES = frozenset(SkillSource.values)


def _sql() -> str:
    token = ApiToken._meta.db_table
    user_model = ApiToken._meta.get_field("user").related_model
    user = user_model._meta.db_table
    active = getattr(user_model._meta.get_field("is_active"), "column", "is_active")
    from registry.models import RegistryState

    state = RegistryState._meta.db_table
    return (
        f"SELECT t.id, t.scopes, t.last_used_at, u.{active}, "
        f"(SELECT s.generation FROM {state} s WHERE s.id = 1) "
        f"FROM {token} t INNER JOIN {user} u ON u.id = t.user_id "
        f"WHERE t.secret_hash = %s AND t.revoked_at IS NULL"
    )


_SQL: list[str] = []


def bearer_generation(request, scope: str) -> int | None:
    """The registry generation when the request carries a valid bearer token with `scope`, else None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header.startswith("Bearer "):
        return None
    secret = header[7:].strip()
    if not secret:
        return None
    if not _SQL:
        _SQL.append(_sql())
    with connection.cursor() as cursor:
        cursor.execute(_SQL[0], [ApiToken.hash_secret(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, scopes, last_used_at, is_active, generation = row
    if isinstance(scopes, str):  # SQLite, and PostgreSQL jsonb through a raw cursor
        scopes = json.loads(scopes) if f'"{scope}"' in scopes else ()
    if not is_active or scope not in (scopes or ()):
        return None
    if isinstance(last_used_at, str):  # SQLite returns naive UTC text from a raw cursor
        last_used_at = parse_datetime(last_used_at)
    if last_used_at is not None and timezone.is_naive(last_used_at):
        last_used_at = timezone.make_aware(last_used_at, dt.UTC)
    touch_token(token_id, last_used_at)
    return int(generation or 0)


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
