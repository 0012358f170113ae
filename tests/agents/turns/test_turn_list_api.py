"""GET /agent/turns and /agent/turns/causes: who reads which turns, the filters, the row shape,
and failed turns grouped by cause."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import AgentTurn, TurnOrigin
from agents.turns import services
from registry.roles import ADMIN, ANALYST, AUTHOR
from tests.agents.turns.turn_runs import ABORTS, EMPTY_ANSWER, LOOPS, SUCCEEDS, TOOL_FAILS, run_turn
from tests.factories import publish, user_with_role

# The lease keeper renews from a thread of its own, on its own connection: turns are committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def skill(settings):
    settings.AGENT_MAX_ITERATIONS = 3
    publish("sql-query", description="Writes SQL queries.")


@pytest.fixture
def people():
    return {role: user_with_role(role) for role in (ADMIN, ANALYST, AUTHOR)} | {"other": user_with_role(AUTHOR)}


def client(make_token, user, scopes) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes, user=user)}")
    return api


def ids(response) -> set[str]:
    assert response.status_code == 200, response.json()
    return {row["id"] for row in response.json()["results"]}


def test_analysts_and_admins_read_every_turn_and_authors_their_own(make_token, people):
    mine = run_turn(people[AUTHOR], SUCCEEDS)
    theirs = run_turn(people["other"], SUCCEEDS)
    everyone = {str(mine.pk), str(theirs.pk)}

    assert ids(client(make_token, people[ANALYST], ["analytics:read"]).get("/api/v1/agent/turns")) == everyone
    assert ids(client(make_token, people[ADMIN], ["analytics:read"]).get("/api/v1/agent/turns")) == everyone
    assert ids(client(make_token, people[ADMIN], ["agent:run"]).get("/api/v1/agent/turns")) == everyone
    author = client(make_token, people[AUTHOR], ["agent:run", "analytics:read"])
    assert ids(author.get("/api/v1/agent/turns")) == {str(mine.pk)}

    # One turn follows the same rule: an analyst reads any trace, an author only their own.
    analyst = client(make_token, people[ANALYST], ["analytics:read"])
    detail = analyst.get(f"/api/v1/agent/turns/{theirs.pk}")
    assert detail.status_code == 200
    assert {event["type"] for event in detail.json()["trace"]} >= {"llm_call", "skill_activated"}
    assert author.get(f"/api/v1/agent/turns/{theirs.pk}").status_code == 404


def test_reading_turns_needs_one_of_the_two_scopes(make_token, people):
    refused = client(make_token, people[ANALYST], ["skills:read"]).get("/api/v1/agent/turns")
    assert refused.status_code == 403
    assert "agent:run" in refused.json()["detail"] and "analytics:read" in refused.json()["detail"]
    # An author's token without agent:run reads none of their turns and is told why.
    own_only = client(make_token, people[AUTHOR], ["analytics:read"]).get("/api/v1/agent/turns")
    assert own_only.status_code == 403
    assert own_only.json()["scope"] == "agent:run"
    assert APIClient().get("/api/v1/agent/turns").status_code == 401


def test_a_row_has_the_documented_shape(make_token, people):
    turn = run_turn(people[AUTHOR], SUCCEEDS, message="x" * 500)
    services.agent_turn_feedback(turn=turn, rating="down", comment="wrong table")

    body = client(make_token, people[ANALYST], ["analytics:read"]).get("/api/v1/agent/turns").json()

    assert body["count"] == 1 and body["next"] is None
    (row,) = body["results"]
    assert set(row) == {
        "id", "status", "created_at", "duration_ms", "model", "origin", "message", "skills", "tokens",
        "cost", "feedback", "error",
    }  # fmt: skip
    assert row["status"] == "succeeded" and row["origin"] == "api" and row["model"] == "scripted"
    assert row["message"] == "x" * 300
    assert row["skills"] == [{"name": "sql-query", "version": 1, "trigger": "read_skill"}]
    assert row["feedback"] == {"rating": "down", "comment": "wrong table"}
    assert isinstance(row["duration_ms"], int) and isinstance(row["tokens"], int)
    assert row["error"] == ""


def test_the_filters_narrow_the_list(make_token, people):
    author = people[AUTHOR]
    ok = run_turn(author, SUCCEEDS, message="monthly revenue by region", origin=TurnOrigin.PLAYGROUND)
    aborted = run_turn(author, ABORTS)
    plain = run_turn(author, [{"content": "hi"}], message="hello there")
    services.agent_turn_feedback(turn=ok, rating="up")
    services.agent_turn_feedback(turn=aborted, rating="down")
    api = client(make_token, people[ANALYST], ["analytics:read"])

    def listed(query: str) -> set[str]:
        return ids(api.get(f"/api/v1/agent/turns?{query}"))

    assert listed("skill=sql-query") == {str(ok.pk), str(aborted.pk)}
    assert listed("skill=sql-query&version=1&trigger=read_skill") == {str(ok.pk), str(aborted.pk)}
    assert listed("skill=sql-query&version=2") == set()
    assert listed("status=failed") == {str(aborted.pk)}
    assert listed("feedback=up") == {str(ok.pk)}
    assert listed("feedback=down") == {str(aborted.pk)}
    assert listed("origin=playground") == {str(ok.pk)}
    assert listed("q=REVENUE") == {str(ok.pk)}
    assert listed("model=scripted") == {str(ok.pk), str(aborted.pk), str(plain.pk)}
    assert listed("skill=sql-query&event=failed") == {str(aborted.pk)}
    today = timezone.now().date()
    assert len(listed(f"from={today}&to={today}")) == 3
    assert listed(f"to={today - dt.timedelta(days=1)}") == set()
    # Newest first.
    order = [row["id"] for row in api.get("/api/v1/agent/turns").json()["results"]]
    assert order == [str(plain.pk), str(aborted.pk), str(ok.pk)]


@pytest.mark.parametrize(
    "query, field",
    [
        ("status=exploded", "status"),
        ("origin=cron", "origin"),
        ("feedback=meh", "feedback"),
        ("version=2", "version"),
        ("skill=x&version=0", "version"),
        ("source=workspace", "source"),
        ("skill=x&source=elsewhere", "source"),
        ("from=2026-13-01", "from"),
        ("from=2026-02-02&to=2026-02-01", "from"),
        ("event=offered", "event"),
        ("cause=gremlins", "cause"),
        ("q=a%00b", "q"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(make_token, people, query, field):
    response = client(make_token, people[ANALYST], ["analytics:read"]).get(f"/api/v1/agent/turns?{query}")
    assert response.status_code == 400, response.content
    assert field in response.json()["fields"]
    causes = client(make_token, people[ANALYST], ["analytics:read"]).get(f"/api/v1/agent/turns/causes?{query}")
    assert causes.status_code == 400


def test_failed_turns_are_grouped_by_cause(make_token, people):
    author = people[AUTHOR]
    run_turn(author, SUCCEEDS)
    for _ in range(2):
        run_turn(author, ABORTS)
    run_turn(author, TOOL_FAILS)
    run_turn(author, LOOPS)
    run_turn(author, EMPTY_ANSWER)
    queued = services.agent_turn_create(user=author, message="later", model="scripted", script=SUCCEEDS)
    services.agent_turn_cancel(turn=queued)
    api = client(make_token, people[ANALYST], ["analytics:read"])

    body = api.get("/api/v1/agent/turns/causes").json()

    assert (body["failed"], body["cancelled"]) == (5, 1)
    found = {(c["cause"], c["detail"]): c["count"] for c in body["causes"]}
    assert found == {
        ("aborted", "no database given"): 2,
        ("tool_error", "read_skill"): 1,
        ("budget_exceeded", "iterations"): 1,
        ("model_error", ""): 1,
        ("cancelled", ""): 1,
    }
    assert body["causes"][0]["cause"] == "aborted"  # most first
    # Each cause is a filter of the list: one click from the count to its turns.
    assert len(ids(api.get("/api/v1/agent/turns?cause=aborted&detail=no+database+given"))) == 2
    assert len(ids(api.get("/api/v1/agent/turns?cause=tool_error"))) == 1
    # Narrowed like the list: the failures of the turns that loaded sql-query.
    narrowed = api.get("/api/v1/agent/turns/causes?skill=sql-query").json()
    assert {c["cause"] for c in narrowed["causes"]} == {"aborted", "budget_exceeded", "model_error"}
    # An author's causes count only their own turns.
    assert client(make_token, people["other"], ["agent:run"]).get("/api/v1/agent/turns/causes").json()["failed"] == 0


def test_the_schema_describes_the_list():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/agent/turns"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"skill", "version", "status", "model", "trigger", "feedback", "origin", "q", "from", "to"} <= names
    assert "400" in operation["responses"]
    assert "/api/v1/agent/turns/causes" in schema["paths"]
    assert AgentTurn._meta.get_field("origin").default == "api"
