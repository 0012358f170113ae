"""Accounts and roles: created and re-roled here (the `users` command), or changed through
Django's own user and group screens, whose saves these services audit like every other write
(Django's forms handle passwords and permissions there)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Field, Q

from registry.errors import ApplicationError, Conflict, NotFound
from registry.roles import ADMIN, ROLE_SCOPES, user_roles
from registry.services.audit import SYSTEM, Actor, audit_record


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


def _role_check(role: str) -> None:
    if role not in ROLE_SCOPES:
        raise ApplicationError(
            f"Unknown role '{role}': choose {', '.join(ROLE_SCOPES)}.", fields={"role": "unknown role"}
        )


def _role_apply(user, role: str) -> None:
    """Make `role` the user's only role. An admin is a superuser with staff access (the Django
    admin), as `ensure_admin` makes one; the other roles are their group alone."""
    user.is_superuser = user.is_staff = role == ADMIN
    user.save(update_fields=["is_superuser", "is_staff"])
    user.groups.remove(*Group.objects.filter(name__in=ROLE_SCOPES).exclude(name=role))
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    user.__dict__.pop("_registry_roles", None)  # roles are cached per user object (registry/roles.py)


def account_create(*, username: str, role: str, password: str, actor: Actor):
    """A new active account holding `role`, its password checked by Django's validators."""
    _role_check(role)
    User = get_user_model()
    if not username:
        raise ApplicationError("Give a username.", fields={"username": "required"})
    username_field = User._meta.get_field(User.USERNAME_FIELD)
    try:
        if isinstance(username_field, Field):  # always, for a user model; the check is for mypy
            username_field.run_validators(username)
    except ValidationError as exc:
        raise ApplicationError(f"Username: {' '.join(exc.messages)}", fields={"username": "invalid"}) from None
    try:
        validate_password(password, user=User(username=username))
    except ValidationError as exc:
        raise ApplicationError(f"Password: {' '.join(exc.messages)}", fields={"password": "too weak"}) from None
    with transaction.atomic():
        if User.objects.filter(username=username).exists():
            raise Conflict(f"A user named '{username}' already exists; use `users set-role` to change their role.")
        user = User.objects.create_user(username=username, password=password)
        _role_apply(user, role)
        account_saved(user=user, before=None, actor=actor)
    return user


def account_role_set(*, username: str, role: str, actor: Actor):
    """Give an existing account `role` (and only it). Refuses to demote the last active admin,
    which would leave nobody able to manage accounts and tokens from the console."""
    _role_check(role)
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        if user is None:
            raise NotFound(f"No user named '{username}'.", fields={"username": "unknown user"})
        before = account_snapshot(user)
        if ADMIN in before["roles"] and role != ADMIN and user.is_active:
            # Locked, so two admins demoting each other at once cannot both succeed.
            admins = User.objects.select_for_update(of=("self",)).filter(
                Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True
            )
            if not set(admins.values_list("pk", flat=True)) - {user.pk}:
                raise Conflict(f"'{username}' is the last active admin; make another admin first.")
        _role_apply(user, role)
        account_saved(user=user, before=before, actor=actor)
    return user


@dataclass(frozen=True)
class AdminEnsured:
    created: bool
    generated_password: str | None  # set when the account was created without a given password


def account_admin_ensure(*, username: str, password: str = "", actor: Actor = SYSTEM) -> AdminEnsured:
    """Make sure `username` exists as an admin (the first login of `make run`).

    A missing account is created as a superuser holding the admin role, with `password` or, when
    none is given, a generated one, returned as the only time it is known. An existing account
    keeps its roles; a given `password` replaces its password.
    """
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        if user is None:
            generated = None if password else secrets.token_urlsafe(12)
            user = User.objects.create_superuser(username=username, email="", password=password or generated)
            _role_apply(user, ADMIN)
            account_saved(user=user, before=None, actor=actor)
            return AdminEnsured(created=True, generated_password=generated)
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
            account_password_set(user=user, actor=actor)
    return AdminEnsured(created=False, generated_password=None)
