"""The turn endpoints without a worker: validation, scopes, ownership, claiming, feedback."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.models import AgentTurn, TurnStatus
from agents.turns import services
from registry.models import UsageEvent
from registry.roles import ADMIN, ANALYST, AUTHOR
from tests.factories import UserFactory, user_with_role

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
    owner = user_with_role(AUTHOR)
    turn = services.agent_turn_create(user=owner, message="mine", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"]).get(f"/api/v1/agent/turns/{turn.pk}")
    assert response.status_code == 404
    assert client_for(make_token, ["agent:run"], user=owner).get(f"/api/v1/agent/turns/{turn.pk}").status_code == 200


def _user_in_groups(*roles: str):
    user = UserFactory()
    user.groups.set([Group.objects.get_or_create(name=role)[0] for role in roles])
    return user


def test_who_may_act_on_a_turn_is_who_reads_it_with_agent_run(make_token):
    """One rule for reading and acting: an admin (by group, not only a superuser) cancels
    anyone's turn; an author who is also an analyst reads every turn with `analytics:read` but
    acts, with `agent:run`, only on their own."""
    owner = user_with_role(AUTHOR)
    theirs = services.agent_turn_create(user=owner, message="theirs", model="scripted", script=SCRIPT)
    author_analyst = _user_in_groups(AUTHOR, ANALYST)
    both = client_for(make_token, ["agent:run", "analytics:read"], user=author_analyst)

    assert both.get(f"/api/v1/agent/turns/{theirs.pk}").status_code == 200
    assert both.post(f"/api/v1/agent/turns/{theirs.pk}/cancel").status_code == 404
    assert both.post(f"/api/v1/agent/turns/{theirs.pk}/feedback", {"rating": "up"}, format="json").status_code == 404

    admin = client_for(make_token, ["agent:run"], user=_user_in_groups(ADMIN))
    assert admin.post(f"/api/v1/agent/turns/{theirs.pk}/cancel").status_code == 202


def test_only_one_of_two_deliveries_claims_a_turn():
    turn = services.agent_turn_create(user=UserFactory(), message="x", model="scripted", script=SCRIPT)
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is not None
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is None


def test_cancelling_a_queued_turn_ends_it_at_once(make_token):
    user = user_with_role(AUTHOR)
    turn = services.agent_turn_create(user=user, message="x", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"], user=user).post(f"/api/v1/agent/turns/{turn.pk}/cancel")
    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert services.agent_turn_claim(turn_id=str(turn.pk)) is None


def test_feedback_is_recorded_once_per_loaded_skill_and_can_be_changed(make_token):
    user = user_with_role(AUTHOR)
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
    user = user_with_role(AUTHOR)
    turn = services.agent_turn_create(user=user, message="x", model="scripted", script=SCRIPT)
    response = client_for(make_token, ["agent:run"], user=user).post(
        f"/api/v1/agent/turns/{turn.pk}/feedback", {"rating": "up"}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["fields"] == {"turn": "queued"}


# --- an unknown forced skill is refused at submission ---------------------------------------


@pytest.fixture
def review_skills(db):
    from tests.factories import publish

    publish("code-review", description="Reviews code.")
    publish("code-explain", description="Explains code.")
    publish("retired-review", description="Old.")
    from registry import selectors
    from registry.services.skills import skill_set_enabled

    skill_set_enabled(skill=selectors.skill_get(name="retired-review"), enabled=False)


def post_turn(make_token, body):
    return client_for(make_token, ["agent:run"]).post("/api/v1/agent/turns", body, format="json")


def test_an_unknown_forced_skill_is_a_400_naming_it_and_the_closest_names(make_token, review_skills):
    response = post_turn(make_token, {"message": "check app.py", "forced_skill": "code-reveiw"})

    assert response.status_code == 400
    body = response.json()
    assert "'code-reveiw'" in body["detail"] and "code-review" in body["detail"]
    assert body["fields"] == {"forced_skill": "unknown skill 'code-reveiw'"}
    assert body["suggestions"][0] == "code-review"
    assert not AgentTurn.objects.exists()


def test_an_unknown_slash_command_is_a_400_on_the_message(make_token, review_skills):
    response = post_turn(make_token, {"message": "/code-reviw check app.py"})

    assert response.status_code == 400
    body = response.json()
    assert "'/code-reviw'" in body["detail"]
    assert body["fields"] == {"message": "unknown skill 'code-reviw'"}
    assert body["suggestions"][0] == "code-review"
    assert not AgentTurn.objects.exists()


def test_a_disabled_skill_cannot_be_forced(make_token, review_skills):
    response = post_turn(make_token, {"message": "/retired-review now"})
    assert response.status_code == 400
    assert "retired-review" not in response.json()["suggestions"]


@pytest.mark.parametrize("body", [{"message": "/retired-notes now"}, {"message": "x", "forced_skill": "retired-notes"}])
def test_a_skill_whose_skill_md_says_enabled_false_cannot_be_forced(make_token, review_skills, body):
    from tests.factories import publish

    publish("retired-notes", description="Takes notes.", enabled="false")

    response = post_turn(make_token, body)

    assert response.status_code == 400
    assert "retired-notes" not in response.json()["suggestions"]
    assert not AgentTurn.objects.exists()


def test_an_unknown_name_with_nothing_close_says_so_without_suggestions(make_token, review_skills):
    response = post_turn(make_token, {"message": "hi", "forced_skill": "zzzz"})
    assert response.status_code == 400
    assert response.json()["suggestions"] == []
    assert "Did you mean" not in response.json()["detail"]


@pytest.mark.parametrize(
    "message",
    [
        "/tmp/foo is broken",  # a path: the runtime's parser reads no command here
        "please run /code-reviw later",  # a slash word that is not the first word
        "see https://example.com/x",
    ],
)
def test_a_message_that_is_not_a_slash_command_is_queued(make_token, review_skills, message):
    assert post_turn(make_token, {"message": message}).status_code == 202


@pytest.mark.parametrize(
    "body",
    [
        {"message": "/code-review check app.py"},
        {"message": "/CODE-REVIEW x"},
        {"message": "x", "forced_skill": "code-review"},
    ],
)
def test_a_known_forced_skill_is_queued(make_token, review_skills, body):
    response = post_turn(make_token, body)
    assert response.status_code == 202, response.json()
