"""A token can do no more than its owner's role: scopes beyond the role are refused
when the token is created (service, CLI), and cut on every request when the role later shrinks."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from registry.errors import ApplicationError
from registry.models import ApiToken, TokenScope
from registry.roles import ADMIN, ANALYST, AUTHOR
from registry.services.tokens import api_token_create
from tests.factories import UserFactory, make_skill_md, publish, user_with_role

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_an_analyst_cannot_be_given_a_write_token():
    user_with_role(ANALYST, username="ann")
    with pytest.raises(ApplicationError) as caught:
        api_token_create(name="t", username="ann", scopes=["skills:read", "skills:write", "rules:write"])
    assert "rules:write, skills:write" in caught.value.detail and "analyst" in caught.value.detail
    assert "scopes" in caught.value.fields
    assert not ApiToken.objects.exists()


def test_a_user_without_a_role_can_be_given_no_token():
    UserFactory(username="nobody")
    with pytest.raises(ApplicationError, match="no role"):
        api_token_create(name="t", username="nobody", scopes=["skills:read"])


@pytest.mark.parametrize("role", [ANALYST, AUTHOR, ADMIN])
def test_a_role_can_grant_exactly_its_own_scopes(role):
    from registry.roles import ROLE_SCOPES

    user = user_with_role(role)
    token, _ = api_token_create(name="t", username=user.username, scopes=sorted(ROLE_SCOPES[role]))
    assert set(token.scopes) == set(ROLE_SCOPES[role])


def test_the_cli_says_why_a_scope_is_refused():
    user_with_role(ANALYST, username="ann")
    with pytest.raises(CommandError, match="cannot grant skills:write"):
        call_command("tokens", "create", "t", "--user", "ann", "--scopes", "skills:write", stdout=StringIO())
    assert not ApiToken.objects.exists()


def test_a_demoted_owner_s_token_loses_the_role_s_scopes_on_the_next_request():
    user = user_with_role(AUTHOR, username="dan")
    _, secret = api_token_create(name="t", username="dan", scopes=["skills:read", "skills:write"])
    client = bearer(secret)
    assert client.post("/api/v1/skills", {"skill_md": make_skill_md("one")}, format="json").status_code == 201

    user.groups.set([Group.objects.get_or_create(name=ANALYST)[0]])

    response = client.post("/api/v1/skills", {"skill_md": make_skill_md("two")}, format="json")
    assert response.status_code == 403
    body = response.json()
    assert body["scope"] == "skills:write" and "owner's role" in body["detail"]
    assert client.get("/api/v1/skills").status_code == 200  # reading is still in the analyst role


def test_a_superuser_made_ordinary_loses_admin_scopes():
    user = user_with_role(ADMIN, username="eve")
    _, secret = api_token_create(name="t", username="eve", scopes=[TokenScope.SKILLS_READ])
    publish("guarded")
    client = bearer(secret)
    assert client.get("/api/v1/skills/guarded/SKILL.md").status_code == 200
    user.is_superuser = False
    user.save()
    assert client.get("/api/v1/skills/guarded/SKILL.md").status_code == 403
    assert client.get("/api/v1/skills").status_code == 403
