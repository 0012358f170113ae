"""Console and CLI accounts with their roles (registry/roles.py), read in two queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group
from django.db.models import Prefetch

from registry.roles import roles_of


@dataclass(frozen=True)
class AccountRow:
    user: AbstractBaseUser
    roles: list[str]


def account_list(*, active_only: bool = False) -> list[AccountRow]:
    users = get_user_model().objects.order_by("username")
    if active_only:
        users = users.filter(is_active=True)
    users = users.prefetch_related(Prefetch("groups", queryset=Group.objects.only("name")))
    return [
        AccountRow(
            user=user,
            roles=sorted(roles_of(is_superuser=user.is_superuser, group_names=[g.name for g in user.groups.all()])),
        )
        for user in users
    ]
