"""Every write leaves an AuditLog row: who (user and channel), what, before and after."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.models import AuditLog


@dataclass(frozen=True)
class Actor:
    """Who is writing: a user (or nobody, for system syncs) and the channel they came through."""

    user: Any = None
    via: str = "system"

    @property
    def user_or_none(self):
        return self.user if getattr(self.user, "is_authenticated", False) else None


SYSTEM = Actor()


def audit_record(
    *,
    actor: Actor,
    action: str,
    object_type: str,
    object_repr: str,
    before: dict | None = None,
    after: dict | None = None,
) -> AuditLog:
    return AuditLog.objects.create(
        actor=actor.user_or_none,
        via=actor.via[:120],
        action=action,
        object_type=object_type,
        object_repr=object_repr[:255],
        before=before,
        after=after,
    )
