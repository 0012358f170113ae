"""Console users with roles, logged in through Django's test client."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from tests.factories import UserFactory


def user_with_role(username: str, role: str):
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


@pytest.fixture
def analyst(db):
    return user_with_role("alan", "analyst")


@pytest.fixture
def author_client(client, author):
    client.force_login(author)
    return client


@pytest.fixture
def analyst_client(client, analyst):
    client.force_login(analyst)
    return client
