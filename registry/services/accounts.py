"""Accounts and roles: created, re-roled, deactivated and sent a set-password link here (the
console's users page and the `users` command), or changed through Django's own user and group
screens, whose saves these services audit like every other write (Django's forms handle passwords
and permissions there)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Field, Q
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

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


def account_create(*, username: str, role: str, password: str | None, email: str = "", actor: Actor):
    """A new active account holding `role`, its password checked by Django's validators. With
    `password` None it has no usable password until its owner sets one with the link
    `account_password_link` gives (the console's "one-time set-password link")."""
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
    email = email.strip()
    if email:
        try:
            User._meta.get_field("email").run_validators(email)  # type: ignore[union-attr]
        except ValidationError:
            raise ApplicationError(f"Email: '{email}' is not an address.", fields={"email": "invalid"}) from None
    if password is not None:
        try:
            validate_password(password, user=User(username=username))
        except ValidationError as exc:
            raise ApplicationError(f"Password: {' '.join(exc.messages)}", fields={"password": "too weak"}) from None
    with transaction.atomic():
        if User.objects.filter(username=username).exists():
            raise Conflict(
                f"A user named '{username}' already exists; change their role instead.",
                fields={"username": "already exists"},
            )
        user = User.objects.create_user(username=username, email=email, password=password)  # None: unusable
        _role_apply(user, role)
        account_saved(user=user, before=None, actor=actor)
    return user


def account_role_set(*, username: str, role: str, actor: Actor):
    """Give an existing account `role` (and only it). Refuses to demote the last active admin."""
    _role_check(role)
    with transaction.atomic():
        user = _account_locked(username)
        before = account_snapshot(user)
        if ADMIN in before["roles"] and role != ADMIN and user.is_active:
            _last_admin_check(user, doing="changing this one's role")
        _role_apply(user, role)
        account_saved(user=user, before=before, actor=actor)
    return user


def _account_locked(username: str):
    user = get_user_model().objects.select_for_update().filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named '{username}'.", fields={"username": "unknown user"})
    return user


def _last_admin_check(user, *, doing: str) -> None:
    """Refuse to take the admin role or the account away from the last active admin, which would
    leave nobody able to manage accounts and tokens from the console. Locks the admins, so two
    admins demoting or deactivating each other at once cannot both succeed."""
    admins = (
        get_user_model()
        .objects.select_for_update(of=("self",))
        .filter(Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True)
    )
    if not set(admins.values_list("pk", flat=True)) - {user.pk}:
        raise Conflict(f"'{user.get_username()}' is the last active admin; make another admin before you {doing}.")


def account_active_set(*, username: str, active: bool, actor: Actor):
    """Deactivate an account (or make it active again). A deactivated account cannot log in, its
    console sessions end (Django's backend refuses an inactive user on their next request), and
    its API tokens are refused at once (registry/selectors/tokens.py checks the owner's
    is_active; the change notifies every process's token cache). The tokens are kept, not
    revoked, so reactivating brings them back; revoke them to end them for good.

    Nobody deactivates their own account (from the console they would lock themselves out
    mid-click), nor the last active admin."""
    with transaction.atomic():
        user = _account_locked(username)
        if user.is_active == active:
            return user
        if not active:
            if actor.user_or_none is not None and actor.user_or_none.pk == user.pk:
                raise Conflict("You cannot deactivate your own account; ask another admin.")
            if ADMIN in user_roles(user):
                _last_admin_check(user, doing="deactivating this one")
        before = account_snapshot(user)
        user.is_active = active
        user.save(update_fields=["is_active"])
        account_saved(user=user, before=before, actor=actor)
    return user


@dataclass(frozen=True)
class PasswordLink:
    """The two parts of Django's password-reset URL (`password-set` in registry/console/users.py)."""

    uidb64: str
    token: str


def account_password_link(*, username: str, actor: Actor) -> PasswordLink:
    """A link with which the account's owner sets a new password, once: Django's password-reset
    token, which hashes the current password and last login, so it stops working when the
    password is set (or the owner logs in) and after PASSWORD_RESET_TIMEOUT. Making one changes
    nothing until it is used; it is audited, as whoever holds it may take the account."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named '{username}'.", fields={"username": "unknown user"})
    if not user.is_active:
        raise Conflict(f"'{username}' is deactivated; activate the account before sending a link.")
    audit_record(actor=actor, action="user.password_link", object_type="user", object_repr=user.username)
    return PasswordLink(
        uidb64=urlsafe_base64_encode(force_bytes(user.pk)), token=default_token_generator.make_token(user)
    )


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
