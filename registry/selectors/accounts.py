"""Console and CLI accounts with their roles (registry/roles.py), read in two queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group
from django.db.models import Count, Prefetch, Q

from registry.errors import NotFound
from registry.roles import ADMIN, roles_of


@dataclass(frozen=True)
class AccountRow:
    user: AbstractBaseUser
    roles: list[str]
    live_tokens: int = 0  # tokens not revoked (an inactive owner's are refused all the same)


def account_list(*, active_only: bool = False) -> list[AccountRow]:
    users = get_user_model().objects.order_by("username")
    if active_only:
        users = users.filter(is_active=True)
    users = users.annotate(live_tokens=Count("api_tokens", filter=Q(api_tokens__revoked_at__isnull=True)))
    users = users.prefetch_related(Prefetch("groups", queryset=Group.objects.only("name")))
    return [
        AccountRow(
            user=user,
            roles=sorted(roles_of(is_superuser=user.is_superuser, group_names=[g.name for g in user.groups.all()])),
            live_tokens=user.live_tokens,
        )
        for user in users
    ]


def account_get(*, user_id: int) -> AbstractBaseUser:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound("No such user.")
    return user


def account_admins() -> list[AbstractBaseUser]:
    """The active accounts holding the admin role: who can grant a role."""
    admins = get_user_model().objects.filter(Q(is_superuser=True) | Q(groups__name=ADMIN), is_active=True)
    return list(admins.distinct().order_by("username"))
