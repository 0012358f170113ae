"""The hot read path: raw SKILL.md for bearer-token clients, usually without touching the database.

Agents fetch SKILL.md on every turn, mostly getting 304s. Going through DRF costs an ORM query
for the token (with the user), content negotiation and Request wrapping — several times the cost
of the bytes themselves. Here the token is checked by the one token check every bearer request
goes through (`api_token_grant`: cached per process while changes are heard, else one query that
also reads the generation), and the bytes and their ETag come from the per-process cache keyed by
the generation (selectors.skill_md_raw). Anything unusual — no bearer token, an unknown or
under-scoped token, odd query parameters, a missing skill — returns None and the normal DRF view
answers (with the usual JSON errors), so behaviour is identical and only the common case is fast.
"""

from __future__ import annotations

import re

from registry.api import throttle
from registry.api.auth import grant_used
from registry.models import ApiToken, SkillSource
from registry.readmodel.rollouts import SUBJECT_MAX_CHARS
from registry.selectors.tokens import api_token_grant

_LABEL = re.compile(r"^[a-z0-9_.-]{1,36}$")
_SOURCES = frozenset(SkillSource.values)


def bearer_generation(request, scope: str) -> tuple[int, int] | None:
    """(the registry generation, the token's id) when the request carries a valid bearer token
    with `scope`, else None."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header.startswith("Bearer "):
        return None
    secret = header[7:].strip()
    if not secret:
        return None
    secret_hash = ApiToken.hash_secret(secret)
    found = api_token_grant(secret_hash=secret_hash)
    if found is None:
        return None
    grant, generation = found
    if not grant.user_active or scope not in grant.scopes:
        return None
    if throttle.retry_after(throttle.token_identity(secret_hash)) is not None:
        return None  # DRF's path answers the 429 (with Retry-After)
    grant_used(grant)
    return generation, grant.token_id


def version_params(request) -> dict | None:
    """label/version/source/subject from the query string when they are plainly valid, else None."""
    if not request.META.get("QUERY_STRING"):
        return {}
    params = request.GET
    if not params:
        return {}
    if any(key not in ("label", "version", "source", "subject") for key in params) or any(
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
    subject = params.get("subject")
    if subject is not None and not 0 < len(subject) <= SUBJECT_MAX_CHARS:
        return None
    return {"label": label, "number": int(version) if version else None, "source": source, "subject": subject}
