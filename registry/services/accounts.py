"""Accounts and roles changed through Django's own user and group screens: audited like every
other write. The admin saves the rows (Django's forms handle passwords and permissions); these
services record what changed and delete through one place."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.roles import user_roles
from registry.services.audit import Actor, audit_record


def account_snapshot(user) -> dict[str, Any]:
    """What the audit log keeps about an account: who it is and what it may do (never a password)."""
    return {
        "username": user.username,
        "email": user.email,
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "roles": sorted(user_roles(user)),
    }


def account_saved(*, user, before: dict[str, Any] | None, actor: Actor) -> None:
    """Call after the user and their groups are saved; `before` is None for a new account."""
    after = account_snapshot(user)
    if before == after:
        return
    changed = after if before is None else {k: v for k, v in after.items() if before.get(k) != v}
    audit_record(
        actor=actor,
        action="user.create" if before is None else "user.update",
        object_type="user",
        object_repr=user.username,
        before=None if before is None else {k: before.get(k) for k in changed},
        after=changed,
    )


def account_password_set(*, user, actor: Actor) -> None:
    """After a password was set for `user` (never recorded: only that it changed)."""
    audit_record(actor=actor, action="user.password", object_type="user", object_repr=user.username)


def account_deleted(*, user, actor: Actor) -> None:
    with transaction.atomic():
        before = account_snapshot(user)
        user.delete()
        audit_record(
            actor=actor, action="user.delete", object_type="user", object_repr=before["username"], before=before
        )


def group_saved(*, group, created: bool, actor: Actor) -> None:
    audit_record(
        actor=actor,
        action="group.create" if created else "group.update",
        object_type="group",
        object_repr=group.name,
        after={"name": group.name, "permissions": sorted(group.permissions.values_list("codename", flat=True))},
    )


def group_deleted(*, group, actor: Actor) -> None:
    with transaction.atomic():
        before = {"name": group.name, "members": sorted(group.user_set.values_list("username", flat=True))}
        group.delete()
        audit_record(actor=actor, action="group.delete", object_type="group", object_repr=before["name"], before=before)
