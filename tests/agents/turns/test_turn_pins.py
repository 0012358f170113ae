"""A turn's label and version pins at the API: stored, shown, and every bad one a 400 naming it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.models import AgentTurn
from registry.models import Skill
from registry.services.labels import label_move
from registry.services.skills import skill_set_enabled
from tests.factories import publish

pytestmark = pytest.mark.django_db

SCRIPT = [{"content": "hello", "tool_calls": []}]


@pytest.fixture
def client(make_token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['agent:run'])}")
    return client


@pytest.fixture
def three_versions():
    """`code-review` v1..v3 with production on v1, and `notes` (one version)."""
    for number in (1, 2, 3):
        publish("code-review", description=f"Reviews code, draft {number}.")
    label_move(skill=Skill.objects.get(name="code-review"), label="production", version_number=1)
    publish("notes", description="Takes notes.")


def post(client, **body):
    return client.post(
        "/api/v1/agent/turns", {"message": "hi", "model": "scripted", "script": SCRIPT, **body}, format="json"
    )


def test_the_label_and_pins_are_stored_and_shown_on_the_turn(client, three_versions):
    response = post(client, label="staging", skill_versions={"code-review": 3}, forced_skill="code-review")

    assert response.status_code == 202, response.json()
    turn = AgentTurn.objects.get(pk=response.json()["id"])
    assert (turn.label, turn.skill_versions) == ("staging", {"code-review": 3})
    detail = client.get(f"/api/v1/agent/turns/{turn.pk}").json()
    assert (detail["label"], detail["skill_versions"]) == ("staging", {"code-review": 3})


def test_without_a_label_or_pins_the_turn_says_so(client, three_versions):
    detail = client.get(f"/api/v1/agent/turns/{post(client).json()['id']}").json()

    assert (detail["label"], detail["skill_versions"]) == ("", {})


def test_a_label_no_skill_carries_is_accepted_and_latest_is_a_label(client, three_versions):
    for label in ("nobody-has-this", "latest"):
        response = post(client, label=label)
        assert response.status_code == 202, response.json()
        assert AgentTurn.objects.get(pk=response.json()["id"]).label == label


@pytest.mark.parametrize("label", ["Production", "has space", "x" * 37, "../etc", 5])
def test_a_malformed_label_is_a_400_naming_label(client, three_versions, label):
    response = post(client, label=label)

    assert response.status_code == 400
    assert "label" in response.json()["fields"]
    assert not AgentTurn.objects.exists()


@pytest.mark.parametrize(
    "pins, field, words",
    [
        ({"code-reveiw": 1}, "skill_versions.code-reveiw", "Did you mean code-review"),
        ({"code-review": 4}, "skill_versions.code-review", "no version 4 (it has versions 1-3)"),
        ({"code-review": 0}, "skill_versions.code-review", "version number"),
        ({"code-review": "3"}, "skill_versions.code-review", "version number"),
        ({"code-review": True}, "skill_versions.code-review", "version number"),
        ({"notes": 1, "code-review": 9}, "skill_versions.code-review", "no version 9"),
        ([["code-review", 3]], "skill_versions", "an object"),
    ],
)
def test_an_unknown_skill_or_version_is_a_400_naming_the_pin(client, three_versions, pins, field, words):
    response = post(client, skill_versions=pins)

    assert response.status_code == 400
    body = response.json()
    assert field in body["fields"] and words in body["detail"], body
    assert not AgentTurn.objects.exists()


def test_a_pin_never_turns_on_a_disabled_skill_or_a_version_that_says_enabled_false(client, three_versions):
    skill_set_enabled(skill=Skill.objects.get(name="notes"), enabled=False)
    publish("code-review", description="Retired draft.", enabled="false")  # v4

    disabled = post(client, skill_versions={"notes": 1}).json()
    off_version = post(client, skill_versions={"code-review": 4}).json()

    assert disabled["fields"] == {"skill_versions.notes": "disabled skill"}
    assert "disabled" in disabled["detail"]
    assert off_version["fields"] == {"skill_versions.code-review": "disabled version"}
    assert "enabled: false" in off_version["detail"]
    assert post(client, skill_versions={"code-review": 3}).status_code == 202, "its other versions still pin"


def test_a_forced_skill_is_checked_at_the_turns_label_and_pins(client, three_versions):
    publish("draft-only", description="Only a draft.", enabled="false")
    publish("draft-only", description="Now on.")  # v2 is on, v1 says enabled: false

    assert post(client, forced_skill="draft-only").status_code == 202  # latest: v2
    response = post(client, forced_skill="draft-only", skill_versions={"draft-only": 1})
    assert response.status_code == 400
    assert "skill_versions.draft-only" in response.json()["fields"]
