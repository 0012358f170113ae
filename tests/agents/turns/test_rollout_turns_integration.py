"""A label's rollout in real turns: HTTP API -> broker -> a real worker -> runtime. A turn's
subject is its conversation: the version its runtime loads is the one every other read path
gives that subject, it stays the same from turn to turn, and its usage events name it (what the
rollout guard compares)."""

from __future__ import annotations

import uuid

import pytest

from agents.models import Conversation
from registry.models import Skill, UsageEvent
from registry.readmodel.served import skill_served
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from tests.agents.turns.test_turns_integration import events, finished, submit
from tests.factories import publish

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

READ = [
    {"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "release-notes"}}]},
    {"content": "Read it.", "tool_calls": []},
]


@pytest.fixture
def rollout():
    publish("release-notes", description="Writes release notes.", body="# V1-BODY\n")
    publish("release-notes", description="Writes release notes, canary.", body="# V2-BODY\n")
    skill = Skill.objects.get(name="release-notes")
    label_move(skill=skill, label="production", version_number=1)
    label_rollout_set(skill=skill, label="production", version_number=2, weight=50)


def conversations_on_each_side(count: int) -> dict[int, list[Conversation]]:
    """`count` conversations whose subject reads v1 and `count` that read v2."""
    sides: dict[int, list[Conversation]] = {1: [], 2: []}
    while min(len(found) for found in sides.values()) < count:
        conversation_id = uuid.uuid4()
        version = skill_served(name="release-notes", subject=f"conversation:{conversation_id}").version
        if len(sides[version]) < count:
            sides[version].append(Conversation.objects.create(id=conversation_id))
    return sides


def test_a_turn_reads_its_conversations_side_of_the_rollout(api, worker, rollout):
    for version, conversations in conversations_on_each_side(2).items():
        for conversation in conversations:
            for _ in range(2):  # the same conversation keeps its version from turn to turn
                turn = finished(
                    api,
                    submit(api, model="scripted", message="notes", conversation=str(conversation.pk), script=READ),
                    worker,
                )
                assert turn["status"] == "succeeded", turn["error"]
                assert [e["version"] for e in events(turn, "skill_activated")] == [version]
                used = UsageEvent.objects.filter(turn_id=turn["id"], skill_name="release-notes")
                assert set(used.values_list("version", flat=True)) == {version}
