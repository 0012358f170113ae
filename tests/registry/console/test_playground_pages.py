"""The playground through Django's test client: sending queues a turn through the turn service
(no worker here: a turn stays queued), the poll appends events and stops with 286, feedback,
roles, CSRF and bounded queries. tests/browser/test_rules_playground.py runs turns for real."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from agents.models import AgentTurn, Conversation, TraceEvent, TurnStatus
from tests.factories import UserFactory, publish

pytestmark = pytest.mark.django_db


def add_event(turn: AgentTurn, seq: int, type: str, **data) -> None:
    TraceEvent.objects.create(turn=turn, seq=seq, type=type, at=timezone.now(), data=data)


def finish(turn: AgentTurn, answer: str = "All done.") -> None:
    now = timezone.now()
    AgentTurn.objects.filter(pk=turn.pk).update(
        status=TurnStatus.SUCCEEDED, answer=answer, started_at=now, finished_at=now
    )


def send(client, **fields):
    return client.post("/playground/", {"message": "hello there", "model": "offline", **fields})


def test_logged_out_the_playground_redirects_to_login(client):
    response = client.get("/playground/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_page_has_a_message_field_a_send_button_and_the_models(author_client, settings):
    settings.AGENT_ALLOW_SCRIPTED = True
    html = author_client.get("/playground/").content.decode()

    assert 'name="message"' in html and ">Send</button>" in html
    assert 'value="offline"' in html and 'value="scripted"' in html and 'name="script"' in html
    assert "demo" in html and "AGENT_MODEL" in html


def test_scripted_is_not_offered_where_it_is_not_allowed(author_client, settings):
    settings.AGENT_ALLOW_SCRIPTED = False
    html = author_client.get("/playground/").content.decode()
    response = send(author_client, model="scripted", script="[]")

    assert 'value="scripted"' not in html and 'name="script"' not in html
    assert response.status_code == 400 and not AgentTurn.objects.exists()


def test_sending_queues_a_turn_and_shows_it(author_client, author):
    response = send(author_client)

    turn = AgentTurn.objects.get()
    assert (turn.user, turn.message, turn.model, turn.status) == (author, "hello there", "offline", "queued")
    assert response.status_code == 302 and response["Location"] == f"/playground/?turn={turn.pk}"
    page = author_client.get(response["Location"]).content.decode()
    assert "queued" in page and f"/playground/turns/{turn.pk}/events/?after=0" in page
    assert 'http-equiv="refresh"' in page  # without JavaScript the page refreshes while it runs


def test_sending_with_htmx_answers_the_workspace_and_pushes_the_turns_address(author_client):
    response = author_client.post(
        "/playground/", {"message": "hello there", "model": "offline"}, HTTP_HX_REQUEST="true"
    )

    turn = AgentTurn.objects.get()
    html = response.content.decode()
    assert response.status_code == 200 and response["HX-Push-Url"] == f"/playground/?turn={turn.pk}"
    assert 'id="workspace"' in html and "<html" not in html
    assert f'<option value="{turn.conversation_id}" selected>' in html  # the next message continues it


def test_a_scripted_turn_and_a_forced_skill_go_to_the_turn_service(author_client, settings):
    settings.AGENT_ALLOW_SCRIPTED = True
    publish("pdf-tools")
    script = [{"content": "Scripted answer."}]

    send(author_client, model="scripted", script=json.dumps(script), forced_skill="/pdf-tools")

    turn = AgentTurn.objects.get()
    assert (turn.model, turn.script, turn.forced_skill) == ("scripted", script, "pdf-tools")


def test_continuing_a_conversation(author_client):
    send(author_client, message="first")
    first = AgentTurn.objects.get()
    finish(first, answer="First answer.")

    send(author_client, message="second", conversation=str(first.conversation_id))

    second = AgentTurn.objects.exclude(pk=first.pk).get()
    assert second.conversation_id == first.conversation_id
    page = author_client.get(f"/playground/?turn={second.pk}").content.decode()
    assert "Earlier in this conversation" in page and "First answer." in page


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"message": "   "}, "Write a message"),
        ({"model": "gpt-nonexistent"}, "Choose one of the listed models"),
        ({"message": "/no-such-skill do it"}, "no enabled skill is named"),
        ({"forced_skill": "no-such-skill"}, "Unknown skill"),
        ({"conversation": "not-a-uuid"}, "Not a conversation id"),
        ({"conversation": "7d8f7f8e-1111-4222-8333-944445555666"}, "No conversation"),
        ({"model": "scripted", "script": "[{oops"}, "not valid JSON"),
        ({"model": "scripted", "script": '[{"content": 5}]'}, "Invalid script"),
    ],
)
def test_a_bad_message_is_refused_with_a_reason_and_nothing_queued(author_client, settings, fields, words):
    settings.AGENT_ALLOW_SCRIPTED = True
    response = send(author_client, **fields)

    assert response.status_code in (400, 404)
    assert words in response.content.decode()
    assert not AgentTurn.objects.exists()


def test_the_poll_appends_new_events_then_stops_with_286(author_client):
    send(author_client)
    turn = AgentTurn.objects.get()
    add_event(
        turn,
        1,
        "llm_call",
        step=1,
        model="offline",
        prompt_tokens=120,
        completion_tokens=8,
        cost=0.0,
        latency_ms=3,
        system_prompt="BASE PROMPT",
        sections=["base", "skills"],
        tool_calls=["read_skill"],
    )
    url = f"/playground/turns/{turn.pk}/events/"

    running = author_client.get(url, {"after": 0}, HTTP_HX_REQUEST="true")
    add_event(
        turn,
        2,
        "tool_call",
        step=1,
        tool="read_skill",
        arguments={"skill_name": "x"},
        ok=True,
        result="body",
        latency_ms=1,
    )
    finish(turn, answer="The final answer.")
    done = author_client.get(url, {"after": 1}, HTTP_HX_REQUEST="true")

    html = running.content.decode()
    assert running.status_code == 200
    assert "llm_call" in html and "BASE PROMPT" in html and 'hx-swap-oob="beforeend:#trace-events"' in html
    assert f"{url}?after=1" in html and 'hx-trigger="every' in html  # the next poll asks for what follows
    final = done.content.decode()
    assert done.status_code == 286
    assert "tool_call" in final and "llm_call" not in final  # only the new event
    assert "succeeded" in final and "The final answer." in final and "128" in final  # status, answer, tokens
    assert "hx-trigger" not in final


def test_the_poll_without_htmx_goes_back_to_the_page(author_client):
    send(author_client)
    turn = AgentTurn.objects.get()
    response = author_client.get(f"/playground/turns/{turn.pk}/events/")
    assert response.status_code == 302 and response["Location"] == f"/playground/?turn={turn.pk}"


def test_feedback_on_a_finished_turn(author_client):
    send(author_client)
    turn = AgentTurn.objects.get()
    early = author_client.post(f"/playground/turns/{turn.pk}/feedback/", {"rating": "up"}, HTTP_HX_REQUEST="true")
    finish(turn)

    response = author_client.post(f"/playground/turns/{turn.pk}/feedback/", {"rating": "down"}, HTTP_HX_REQUEST="true")

    assert "once the turn has finished" in early.content.decode()
    assert response.status_code == 200 and "Thanks" in response.content.decode()
    turn.refresh_from_db()
    assert turn.feedback_rating == -1


def test_someone_elses_turn_is_404_and_their_conversation_shows_nothing(author_client):
    other = UserFactory(username="other")
    conversation = Conversation.objects.create(user=other, title="their secret title")
    turn = AgentTurn.objects.create(user=other, conversation=conversation, message="their secret", model="offline")

    page = author_client.get(f"/playground/?conversation={conversation.pk}").content.decode()

    assert "their secret" not in page

    assert author_client.get(f"/playground/?turn={turn.pk}").status_code == 404
    assert author_client.get(f"/playground/turns/{turn.pk}/events/", HTTP_HX_REQUEST="true").status_code == 404
    assert author_client.get("/playground/?turn=not-a-uuid").status_code == 404


def test_an_admin_by_group_opens_anyones_turn_and_its_conversation(client):
    """The turn API's rule (an admin acts on any turn), not only superusers."""
    admin = UserFactory(username="group-admin")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    other = UserFactory(username="other")
    conversation = Conversation.objects.create(user=other, title="theirs")
    first = AgentTurn.objects.create(user=other, conversation=conversation, message="their first", model="offline")
    finish(first)
    second = AgentTurn.objects.create(user=other, conversation=conversation, message="their second", model="offline")
    client.force_login(admin)

    response = client.get(f"/playground/?turn={second.pk}&conversation={conversation.pk}")

    assert response.status_code == 200
    assert "their first" in response.content.decode()


def test_an_analyst_sees_the_page_but_cannot_run_or_read_turns(analyst_client, analyst):
    html = analyst_client.get("/playground/").content.decode()
    turn = AgentTurn.objects.create(user=analyst, message="x", model="offline")

    assert "can't run turns" in html and ">Send</button>" not in html
    assert send(analyst_client).status_code == 403
    assert analyst_client.get(f"/playground/turns/{turn.pk}/events/").status_code == 403
    assert analyst_client.post(f"/playground/turns/{turn.pk}/feedback/", {"rating": "up"}).status_code == 403
    assert analyst_client.post(f"/playground/turns/{turn.pk}/cancel/").status_code == 403
    assert AgentTurn.objects.count() == 1


def test_sending_needs_the_csrf_token(author):
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)

    turn = AgentTurn.objects.create(user=author, message="x", model="offline")

    assert send(client).status_code == 403
    assert client.post(f"/playground/turns/{turn.pk}/cancel/").status_code == 403
    assert client.post(f"/playground/turns/{turn.pk}/feedback/", {"rating": "up"}).status_code == 403
    turn.refresh_from_db()
    assert AgentTurn.objects.count() == 1 and turn.status == TurnStatus.QUEUED


def test_trace_data_is_escaped(author_client):
    send(author_client)
    turn = AgentTurn.objects.get()
    hostile = "<script>alert(1)</script><img src=x onerror=alert(1)>"
    add_event(turn, 1, "tool_call", step=1, tool=hostile, arguments={hostile: hostile}, ok=False, result=hostile)

    html = author_client.get(f"/playground/?turn={turn.pk}").content.decode()

    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(("url", "max_queries"), [("/playground/", 8), ("turn", 12), ("poll", 9)])
def test_playground_pages_do_a_bounded_number_of_queries(
    author_client, django_assert_max_num_queries, url, max_queries
):
    for number in range(20):
        publish(f"skill-{number:02d}")
    for number in range(5):
        send(author_client, message=f"message {number}")
    turn = AgentTurn.objects.order_by("created_at").last()
    for seq in range(1, 41):
        add_event(
            turn,
            seq,
            "llm_call",
            step=seq,
            prompt_tokens=10,
            completion_tokens=2,
            latency_ms=1,
            system_prompt="x" * 1000,
            sections=["base"],
        )
    finish(turn)
    url = {"turn": f"/playground/?turn={turn.pk}", "poll": f"/playground/turns/{turn.pk}/events/?after=0"}.get(url, url)
    author_client.get(url, HTTP_HX_REQUEST="true")

    with django_assert_max_num_queries(max_queries):
        assert author_client.get(url, HTTP_HX_REQUEST="true").status_code in (200, 286)


@pytest.mark.parametrize(
    "fields",
    [
        {"message": "nul \x00 inside"},
        {"model": "scripted", "script": '[{"content": "\\u0000"}]'},
        {"model": "scripted", "script": "[" * 5000 + "]" * 5000},
        {"model": "scripted", "script": '[{"content": NaN}]'},
        {"forced_skill": "\x00"},
    ],
)
def test_hostile_playground_input_is_a_clear_400_never_a_500(author_client, settings, fields):
    settings.AGENT_ALLOW_SCRIPTED = True
    response = send(author_client, **fields)

    assert response.status_code == 400, response.content.decode()[:500]
    assert "Not sent" in response.content.decode()
    assert not AgentTurn.objects.exists()


@pytest.mark.parametrize("after", ["99999999999999999999999", "-5", "abc", ""])
def test_odd_poll_positions_answer_the_poll(author_client, after):
    send(author_client)
    turn = AgentTurn.objects.get()
    response = author_client.get(f"/playground/turns/{turn.pk}/events/", {"after": after}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200


def test_cancelling_a_queued_turn(author_client):
    send(author_client)
    turn = AgentTurn.objects.get()
    assert "Cancel turn" in author_client.get(f"/playground/?turn={turn.pk}").content.decode()

    response = author_client.post(f"/playground/turns/{turn.pk}/cancel/", HTTP_HX_REQUEST="true")
    poll = author_client.get(f"/playground/turns/{turn.pk}/events/", HTTP_HX_REQUEST="true")

    assert response.status_code == 204
    turn.refresh_from_db()
    assert turn.status == TurnStatus.CANCELLED
    assert poll.status_code == 286 and "Cancelled" in poll.content.decode()


def test_agent_model_is_offered_first_and_chosen_by_default(author_client, settings):
    settings.AGENT_MODEL = "openai/gpt-4o-mini"
    settings.AGENT_MODELS = ["offline", "openai/gpt-4o-mini", "scripted"]  # as settings fill it in
    html = author_client.get("/playground/").content.decode()

    assert '<option value="openai/gpt-4o-mini" selected>' in html
    assert html.index("openai/gpt-4o-mini") < html.index('value="offline"')
