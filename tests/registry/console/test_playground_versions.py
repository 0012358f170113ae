"""Trying a version before promoting it, through Django's test client: the playground's label and
version choices reach the turn service, a side-by-side run queues two pinned turns, and each
panel shows (and polls for) its own turn. No worker here; tests/browser runs them for real."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.models import AgentTurn, Conversation, TraceEvent, TurnStatus
from registry.models import Skill
from registry.services.labels import label_move
from tests.factories import publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def checklist():
    for number in (1, 2, 3):
        publish("release-checklist", description=f"Release checklist, draft {number}.")
    skill = Skill.objects.get(name="release-checklist")
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="staging", version_number=3)


def send(client, **fields):
    return client.post("/playground/", {"message": "ship it", "model": "offline", **fields})


def test_the_form_offers_the_labels_in_use_and_the_forced_skills_versions(author_client, checklist):
    html = author_client.get("/playground/?skill=release-checklist&version=2").content.decode()

    assert 'name="label"' in html and '<option value="staging">staging</option>' in html
    assert '<option value="latest">latest</option>' in html
    assert 'name="version"' in html and 'value="2"' in html and 'name="compare_version"' in html
    assert "has v1, v2, v3" in html


def test_a_label_and_a_version_reach_the_turn(author_client, checklist):
    response = send(author_client, forced_skill="release-checklist", version="3", label="staging")

    assert response.status_code == 302
    turn = AgentTurn.objects.get()
    assert (turn.forced_skill, turn.label, turn.skill_versions) == (
        "release-checklist",
        "staging",
        {"release-checklist": 3},
    )
    html = author_client.get(response["Location"]).content.decode()
    assert "label staging" in html and "release-checklist pinned v3" in html
    assert 'id="id_version"' in html and 'value="3"' in html, "the form keeps the version for the next message"


def test_a_leading_command_is_the_skill_a_version_pins(author_client, checklist):
    send(author_client, message="/release-checklist ship it", version="2")

    assert AgentTurn.objects.get().skill_versions == {"release-checklist": 2}


def test_compare_queues_two_turns_pinned_to_each_version_in_conversations_of_their_own(author_client, checklist):
    response = send(author_client, forced_skill="release-checklist", version="1", compare_version="3")

    assert response.status_code == 302
    left, right = AgentTurn.objects.order_by("created_at")
    assert (left.skill_versions, right.skill_versions) == ({"release-checklist": 1}, {"release-checklist": 3})
    assert left.conversation_id != right.conversation_id
    assert response["Location"] == f"/playground/?turn={left.pk}&compare={right.pk}"

    html = author_client.get(response["Location"]).content.decode()
    assert 'id="turn-panel"' in html and 'id="turn-panel-b"' in html
    assert 'id="trace-events"' in html and 'id="trace-events-b"' in html
    assert f"/playground/turns/{right.pk}/events/?after=0&amp;slot=b" in html
    assert "release-checklist pinned v1" in html and "release-checklist pinned v3" in html
    assert 'name="compare_version"' in html and 'value="3"' in html


def test_compare_over_htmx_renders_both_panels_and_pushes_the_url(author_client, checklist):
    response = author_client.post(
        "/playground/",
        {
            "message": "ship it",
            "model": "offline",
            "forced_skill": "release-checklist",
            "version": "2",
            "compare_version": "3",
        },
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200
    left, right = AgentTurn.objects.order_by("created_at")
    assert response["HX-Push-Url"] == f"/playground/?turn={left.pk}&compare={right.pk}"
    html = response.content.decode()
    assert 'class="compare"' in html and 'id="turn-status-b"' in html


def test_the_compared_panels_poll_fills_in_its_own_elements(author_client, checklist):
    send(author_client, forced_skill="release-checklist", version="1", compare_version="2")
    _, right = AgentTurn.objects.order_by("created_at")
    TraceEvent.objects.create(
        turn=right,
        seq=1,
        type="skill_activated",
        at=timezone.now(),
        data={"skill": "release-checklist", "version": 2, "trigger": "forced"},
    )
    now = timezone.now()
    AgentTurn.objects.filter(pk=right.pk).update(
        status=TurnStatus.SUCCEEDED, answer="Done.", started_at=now, finished_at=now
    )

    response = author_client.get(f"/playground/turns/{right.pk}/events/?after=0&slot=b", headers={"HX-Request": "true"})

    assert response.status_code == 286
    html = response.content.decode()
    assert 'hx-swap-oob="beforeend:#trace-events-b"' in html
    assert 'id="turn-answer-b"' in html and 'id="turn-status-b"' in html and 'id="turn-ran-b"' in html
    assert "ran release-checklist v2" in html, "the header says which version ran"
    assert "· ran" in html and "release-checklist v2" in html, "and so does the answer's"
    assert 'id="turn-answer"' not in html, "never the other panel's elements"


@pytest.mark.parametrize(
    "fields, field, words",
    [
        ({"version": "2"}, "version", "Force a skill"),
        ({"forced_skill": "release-checklist", "version": "two"}, "version", "version number"),
        (
            {"forced_skill": "release-checklist", "version": "2", "compare_version": "2"},
            "compare_version",
            "another version",
        ),
        ({"forced_skill": "release-checklist", "version": "9"}, "version", "no version 9 (it has versions 1-3)"),
        ({"forced_skill": "release-checklist", "version": "1", "compare_version": "9"}, "version", "no version 9"),
        ({"label": "Not A Label"}, "label", "Label names"),
    ],
)
def test_a_bad_choice_is_a_400_naming_the_field_and_queues_nothing(author_client, checklist, fields, field, words):
    response = send(author_client, **fields)

    assert response.status_code == 400
    html = response.content.decode()
    assert f'data-field="{field}"' in html and words in html
    assert not AgentTurn.objects.exists() and not Conversation.objects.exists(), "a side-by-side run is all or none"


def test_an_analyst_gets_no_version_choices_and_cannot_compare(analyst_client, checklist):
    html = analyst_client.get("/playground/").content.decode()
    response = send(analyst_client, forced_skill="release-checklist", version="1", compare_version="2")

    assert 'name="compare_version"' not in html and "can't run turns" in html
    assert response.status_code == 403 and not AgentTurn.objects.exists()


def test_typing_a_forced_skill_lists_its_versions(author_client, checklist):
    hx = {"HX-Request": "true"}
    found = author_client.get("/playground/versions/?forced_skill=release-checklist", headers=hx)
    unknown = author_client.get("/playground/versions/?forced_skill=nope%00", headers=hx)

    assert found.status_code == 200 and "has v1, v2, v3" in found.content.decode()
    assert '<option value="3">' in found.content.decode()
    assert unknown.status_code == 200 and "blank: as the label says" in unknown.content.decode()


def test_an_analyst_is_not_told_a_skills_versions_here(analyst_client, checklist):
    response = analyst_client.get(
        "/playground/versions/?forced_skill=release-checklist", headers={"HX-Request": "true"}
    )

    assert response.status_code == 403
