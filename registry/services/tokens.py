"""API tokens: the secret is generated here, shown once, and only its sha256 is stored. A token's
scopes never exceed its owner's role (registry/roles.py)."""

from __future__ import annotations

import datetime as dt
import secrets

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from registry.errors import ApplicationError, NotFound
from registry.models import ApiToken, TokenScope
from registry.roles import user_roles, user_scopes
from registry.services.audit import SYSTEM, Actor, audit_record

SECRET_PREFIX = "skr_"


NAME_MAX = ApiToken._meta.get_field("name").max_length or 100


def api_token_create(*, name: str, username: str, scopes: list[str], actor: Actor = SYSTEM) -> tuple[ApiToken, str]:
    name = name.strip()
    if not name or len(name) > NAME_MAX or not name.isprintable():
        raise ApplicationError(
            f"A token name is 1-{NAME_MAX} printable characters.",
            fields={"name": f"1-{NAME_MAX} printable characters, no line breaks"},
        )
    unknown = sorted(set(scopes) - set(TokenScope.values))
    if unknown or not scopes:
        raise ApplicationError(
            f"Unknown scopes: {', '.join(unknown)}." if unknown else "Give at least one scope.",
            fields={"scopes": f"choose from {', '.join(TokenScope.values)}"},
        )
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named '{username}'.", fields={"user": "unknown user"})
    beyond = sorted(set(scopes) - user_scopes(user))
    if beyond:
        # A token acts for its owner, so it may do no more than the owner's role allows
        # (registry/api/auth.py cuts it again on every request, should the role later shrink).
        roles = ", ".join(sorted(user_roles(user))) or "no role"
        raise ApplicationError(
            f"'{username}' ({roles}) cannot grant {', '.join(beyond)}: a token's scopes are limited to its "
            "owner's role. Give the user a role that has them, or leave them out.",
            fields={"scopes": f"beyond the owner's role: {', '.join(beyond)}"},
        )
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                name=name,
                user=user,
                prefix=secret[:12],
                secret_hash=ApiToken.hash_secret(secret),
                scopes=sorted(set(scopes)),
            )
            audit_record(
                actor=actor,
                action="token.create",
                object_type="api_token",
                object_repr=name,
                after={"user": username, "scopes": token.scopes},
            )
    except IntegrityError:
        raise ApplicationError(f"A token named '{name}' already exists.", fields={"name": "already exists"}) from None
    return token, secret


def api_token_revoke(*, name: str, actor: Actor = SYSTEM) -> ApiToken:
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(name=name).first()
        if token is None:
            raise NotFound(f"No token named '{name}'.")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(actor=actor, action="token.revoke", object_type="api_token", object_repr=name)
    return token


def api_token_used(*, token_id: int, last_used_at: dt.datetime | None) -> bool:
    """Record that a token was used, at most once a minute (writing on every request would make
    every read a write). Bookkeeping the console shows, not a change anyone made: not audited."""
    now = timezone.now()
    if last_used_at is None or (now - last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
        return True
    return False
