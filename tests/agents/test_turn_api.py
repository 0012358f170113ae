"""The turn endpoints without a worker: validation, scopes, ownership, claiming, feedback."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents import services
from agents.models import AgentTurn, TurnStatus
from registry.models import UsageEvent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SCRIPT = [{"content": "hello", "tool_calls": []}]


def client_for(make_token, scopes, user=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes, user=user)}")
    return client


def test_posting_a_turn_queues_it_and_answers_202(make_token, django_capture_on_commit_callbacks):
    client = client_for(make_token, ["agent:run"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            "/api/v1/agent/turns", {"message": "hi", "model": "scripted", "script": SCRIPT}, format="json"
        )

    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "queued"
    turn = AgentTurn.objects.get(pk=body["id"])
    assert (turn.model, turn.script) == ("scripted", SCRIPT)
    assert len(callbacks) == 1, "the task is sent only after the row commits"


def test_a_turn_is_not_run_inside_the_request(make_token):
    client = client_for(make_token, ["agent:run"])
    response = client.post(
        "/api/v1/agent/turns", {"message": "hi", "model": "scripted", "script": SCRIPT}, format="json"
    )
    assert AgentTurn.objects.get(pk=response.json()["id"]).status == TurnStatus.QUEUED


def test_a_token_without_agent_run_gets_403_and_no_token_401(make_token):
    assert (
        client_for(make_token, ["skills:read"]).post("/api/v1/agent/turns", {"message": "x"}, format="json").status_code
        == 403
    )
    response = APIClient().post("/api/v1/agent/turns", {"message": "x"}, format="json")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_scripted_is_refused_where_it_is_not_allowed(make_token, settings):
    settings.AGENT_ALLOW_SCRIPTED = False
    response = client_for(make_token, ["agent:run"]).post(
        "/api/v1/agent/turns", {"message": "hi", "model": "scripted", "script": SCRIPT}, format="json"
    )
    assert response.status_code == 400
    assert "AGENT_ALLOW_SCRIPTED" in response.json()["detail"]
    assert not AgentTurn.objects.exists()


@pytest.mark.parametrize(
    "script, where",
    [
        ("not a list", "script"),
        ([{"tool_calls": [{"arguments": {}}]}], "0/tool_calls/0"),
        ([{"content": 5}], "0/content"),
    ],
)
def test_a_malformed_script_is_a_400_naming_the_step(make_token, script, where):
    response = client_for(make_token, ["agent:run"]).post(
        "/api/v1/agent/turns", {"message": "hi", "model": "scripted", "script": script}, format="json"
    )
    assert response.status_code == 400
    assert where in response.json()["detail"]


def test_missing_message_is_a_400_naming_the_field(make_token):
    response = client_for(make_token, ["agent:run"]).post("/api/v1/agent/turns", {}, format="json")
    assert response.status_code == 400
    assert "message" in response.json()["fields"]


def test_another_users_turn_is_a_404(make_token):
    owner = UserFactory()
    turn = services.agent_turn_create(user=owner, message="mine", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"]).get(f"/api/v1/agent/turns/{turn.pk}")
    assert response.status_code == 404
    assert client_for(make_token, ["agent:run"], user=owner).get(f"/api/v1/agent/turns/{turn.pk}").status_code == 200


def test_only_one_of_two_deliveries_claims_a_turn():
    turn = services.agent_turn_create(user=UserFactory(), message="x", model="scripted", script=SCRIPT)
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is not None
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is None


def test_a_running_turn_whose_lease_lapsed_can_be_taken_over():
    from datetime import timedelta

    from django.utils import timezone

    turn = services.agent_turn_create(user=UserFactory(), message="x", model="scripted", script=SCRIPT)
    services.agent_turn_claim(turn_id=str(turn.pk))
    AgentTurn.objects.filter(pk=turn.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    again = services.agent_turn_claim(turn_id=str(turn.pk))
    assert again is not None and again.attempts == 2


def test_cancelling_a_queued_turn_ends_it_at_once(make_token):
    user = UserFactory()
    turn = services.agent_turn_create(user=user, message="x", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"], user=user).post(f"/api/v1/agent/turns/{turn.pk}/cancel")
    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is None


def test_feedback_is_recorded_once_per_loaded_skill_and_can_be_changed(make_token):
    user = UserFactory()
    turn = services.agent_turn_create(user=user, message="x", model="scripted", script=SCRIPT)
    AgentTurn.objects.filter(pk=turn.pk).update(status=TurnStatus.SUCCEEDED)
    UsageEvent.objects.create(
        event_id=f"{turn.pk}:loaded:a:0", kind="loaded", skill_name="a", version=1, turn=turn, at=turn.created_at
    )
    client = client_for(make_token, ["agent:run"], user=user)

    assert client.post(f"/api/v1/agent/turns/{turn.pk}/feedback", {"rating": "up"}, format="json").status_code == 200
    assert (
        client.post(
            f"/api/v1/agent/turns/{turn.pk}/feedback", {"rating": "down", "comment": "meh"}, format="json"
        ).status_code
        == 200
    )

    feedback = UsageEvent.objects.get(kind="feedback")
    assert (feedback.skill_name, feedback.rating) == ("a", -1)
    assert (
        client.post(f"/api/v1/agent/turns/{turn.pk}/feedback", {"rating": "sideways"}, format="json").status_code == 400
    )


def test_feedback_on_an_unfinished_turn_is_a_409_conflict(make_token):
    user = UserFactory()
    turn = services.agent_turn_create(user=user, message="x", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"], user=user).post(
        f"/api/v1/agent/turns/{turn.pk}/feedback", {"rating": "up"}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["fields"] == {"turn": "queued"}
