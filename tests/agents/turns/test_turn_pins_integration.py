"""A turn's label and version pins, end to end: HTTP API -> broker -> a real worker -> runtime.

What the worker offers, loads, forces and reports in usage events is the pinned version, and a
turn at a label reads every skill there; the same turns without them run production.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from registry.models import Skill, TokenScope, UsageEvent, UsageKind
from registry.services.labels import label_move
from tests.agents.turns.test_turns_integration import events, finished, submit
from tests.factories import publish

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client(make_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(list(TokenScope.values))}")
    return client


@pytest.fixture
def checklist():
    """v1 (production): a body and no scripts; v2 (staging): another body and scripts/check.sh."""
    publish("release-checklist", description="Release checklist for shipping.", body="# V1-BODY\n\nCheck by hand.\n")
    publish(
        "release-checklist",
        description="Release checklist for shipping, scripted.",
        body="# V2-BODY\n\nRun scripts/check.sh.\n",
        tools=["run_skill"],
        files=[("scripts/check.sh", b"#!/bin/sh\necho V2-SCRIPT\n", True)],
    )
    skill = Skill.objects.get(name="release-checklist")
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="staging", version_number=2)


READ = [
    {"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "release-checklist"}}]},
    {"content": "Read it.", "tool_calls": []},
]


def usage(turn_id: str) -> set[tuple[str, str, int | None, str]]:
    rows = UsageEvent.objects.filter(turn_id=turn_id, skill_name="release-checklist")
    return set(rows.values_list("kind", "skill_name", "version", "label"))


def run(client, worker, **body) -> dict:
    turn = finished(client, submit(client, model="scripted", **body), worker)
    assert turn["status"] == "succeeded", turn["error"]
    return turn


def test_a_pinned_forced_skill_runs_that_version_and_its_usage_says_so(client, worker, checklist):
    done = [{"content": "Checked.", "tool_calls": []}]

    pinned = run(
        client,
        worker,
        message="ship it",
        forced_skill="release-checklist",
        skill_versions={"release-checklist": 2},
        script=done,
    )
    production = run(client, worker, message="ship it", forced_skill="release-checklist", script=done)

    assert pinned["skill_versions"] == {"release-checklist": 2}
    assert [(e["version"], e["trigger"]) for e in events(pinned, "skill_activated")] == [(2, "forced")]
    prompt = events(pinned, "llm_call")[0]["system_prompt"]
    assert "V2-BODY" in prompt and "scripts/check.sh" in prompt and "V1-BODY" not in prompt
    assert (UsageKind.LOADED, "release-checklist", 2, "") in usage(pinned["id"])
    assert (UsageKind.SUCCEEDED, "release-checklist", 2, "") in usage(pinned["id"])

    assert [e["version"] for e in events(production, "skill_activated")] == [1]
    prompt = events(production, "llm_call")[0]["system_prompt"]
    assert "V1-BODY" in prompt and "scripts/check.sh" not in prompt
    assert {version for _, _, version, _ in usage(production["id"])} == {1}


def test_a_turn_at_a_label_offers_and_reads_every_skill_there_and_a_pin_overrides_it(client, worker, checklist):
    staged = run(client, worker, message="release checklist please", label="staging", script=READ)
    pinned_back = run(
        client,
        worker,
        message="release checklist please",
        label="staging",
        skill_versions={"release-checklist": 1},
        script=READ,
    )

    assert staged["label"] == "staging"
    assert "scripted." in events(staged, "llm_call")[0]["system_prompt"], "the offered list is staging's (v2)"
    assert [(e["version"], e["trigger"]) for e in events(staged, "skill_activated")] == [(2, "read_skill")]
    assert "V2-BODY" in events(staged, "tool_call")[0]["result"]
    assert (UsageKind.LOADED, "release-checklist", 2, "staging") in usage(staged["id"])

    assert [e["version"] for e in events(pinned_back, "skill_activated")] == [1]
    assert "V1-BODY" in events(pinned_back, "tool_call")[0]["result"]
    assert {(version, label) for _, _, version, label in usage(pinned_back["id"])} == {(1, "staging")}
