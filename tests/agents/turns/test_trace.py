"""The database trace sink: a step is written with its tool call, in one write, fenced by the
attempt; units without side effects wait for the next write or the turn's outcome."""

from __future__ import annotations

import hashlib
import threading

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import AgentTurn, PromptText, TraceEvent, TurnCheckpoint
from agents.runtime.types import TurnResult
from agents.turns import services
from agents.turns.lease import TurnLost
from agents.turns.selectors import turn_trace_events
from agents.turns.trace import MAX_STRING, DatabaseTraceSink
from registry.models import TokenScope
from tests.agents.turns.test_turn_lifecycle import running_turn
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

RAN = {"ok": True, "content": "4"}


def stored(turn: AgentTurn) -> tuple[list[tuple[int, str]], list[int]]:
    events = list(TraceEvent.objects.filter(turn=turn).order_by("seq").values_list("seq", "type"))
    return events, list(TurnCheckpoint.objects.filter(turn=turn).order_by("index").values_list("index", flat=True))


def a_step(sink: DatabaseTraceSink, *, step: int, first_index: int, outcome=RAN) -> None:
    sink.emit("llm_call", {"step": step, "system_prompt": "You are a careful agent."})
    sink.checkpoint(first_index, {"kind": "model", "step": step})
    sink.emit("tool_call", {"step": step, "tool": "calculator"})
    sink.checkpoint(first_index + 1, {"kind": "tool", "step": step, "call_id": "c", "outcome": outcome})


def test_a_step_is_written_with_its_tool_call_in_one_statement():
    turn = running_turn(lapsed=False).turn
    sink = DatabaseTraceSink(turn)
    sink.emit("rule_fired", {"name": "pdf"})
    sink.checkpoint(0, {"kind": "prepared"})
    sink.emit("llm_call", {"step": 1})
    sink.checkpoint(1, {"kind": "model", "step": 1})
    assert stored(turn) == ([], []), "nothing with side effects happened yet"

    sink.emit("tool_call", {"step": 1})
    with CaptureQueriesContext(connection) as queries:
        sink.checkpoint(2, {"kind": "tool", "step": 1, "call_id": "c", "outcome": RAN})

    assert stored(turn) == ([(1, "rule_fired"), (2, "llm_call"), (3, "tool_call")], [0, 1, 2])
    if connection.vendor == "postgresql":
        assert len(queries) == 1, [query["sql"] for query in queries]
    assert AgentTurn.objects.get(pk=turn.pk).lease_expires_at > turn.lease_expires_at, "the write renews the lease"


def test_a_refused_call_waits_for_the_next_tool_that_ran():
    turn = running_turn(lapsed=False).turn
    sink = DatabaseTraceSink(turn)
    a_step(sink, step=1, first_index=0, outcome=None)  # refused: the tool never ran
    assert stored(turn) == ([], [])

    a_step(sink, step=2, first_index=2)

    events, checkpoints = stored(turn)
    assert [seq for seq, _ in events] == [1, 2, 3, 4] and checkpoints == [0, 1, 2, 3]


def test_the_outcome_writes_the_last_events_and_drops_the_held_checkpoints():
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    a_step(sink, step=1, first_index=0)
    sink.emit("llm_call", {"step": 2})
    sink.checkpoint(2, {"kind": "model", "step": 2})

    assert services.agent_turn_finish(turn=claimed.turn, result=TurnResult(status="succeeded", answer="4"), trace=sink)

    events, checkpoints = stored(claimed.turn)
    assert [kind for _, kind in events] == ["llm_call", "tool_call", "llm_call"] and checkpoints == []
    assert AgentTurn.objects.get(pk=claimed.turn.pk).status == "succeeded"


def test_a_lost_attempt_writes_nothing_of_its_step():
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(attempts=claimed.attempt + 1)  # taken over

    with pytest.raises(TurnLost):
        a_step(sink, step=1, first_index=0)

    assert stored(claimed.turn) == ([], [])


def test_a_later_attempt_numbers_on_and_replaces_the_checkpoints_it_does_not_replay():
    claimed = running_turn(lapsed=False)
    first = DatabaseTraceSink(claimed.turn)
    a_step(first, step=1, first_index=0)
    a_step(first, step=2, first_index=2)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(attempts=2)  # a takeover: the second attempt
    claimed.turn.refresh_from_db()

    second = DatabaseTraceSink(claimed.turn)
    a_step(second, step=2, first_index=2, outcome={"ok": True, "content": "5"})  # step 1 replayed, step 2 anew

    events, checkpoints = stored(claimed.turn)
    assert [seq for seq, _ in events] == [1, 2, 3, 4, 5, 6] and checkpoints == [0, 1, 2, 3]
    assert '"5"' in TurnCheckpoint.objects.get(turn=claimed.turn, index=3).record, "the stale record is replaced"


# --- outside a transaction (as in a worker): the step is written from the writer thread ------


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is PostgreSQL's path")
def test_a_workers_step_is_written_by_the_writer_and_stored_once_settled(transactional_db):
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)

    with CaptureQueriesContext(connection) as queries:
        a_step(sink, step=1, first_index=0)
    sink.settle()

    assert len(queries) == 0, "the turn's own connection sent nothing: the model call goes on meanwhile"
    assert stored(claimed.turn) == ([(1, "llm_call"), (2, "tool_call")], [0, 1])
    a_step(sink, step=2, first_index=2)
    sink.settle()
    events, checkpoints = stored(claimed.turn)
    assert [seq for seq, _ in events] == [1, 2, 3, 4] and checkpoints == [0, 1, 2, 3]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is PostgreSQL's path")
def test_a_step_written_after_the_turn_was_lost_stops_the_attempt_when_settled(transactional_db):
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(attempts=claimed.attempt + 1)  # taken over

    a_step(sink, step=1, first_index=0)  # handed to the writer: the attempt learns of it next
    with pytest.raises(TurnLost):
        sink.settle()

    assert stored(claimed.turn) == ([], [])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is PostgreSQL's path")
def test_the_outcome_waits_for_the_last_step_and_is_refused_when_that_step_was(transactional_db):
    kept = running_turn(lapsed=False)
    sink = DatabaseTraceSink(kept.turn)
    a_step(sink, step=1, first_index=0)
    assert services.agent_turn_finish(turn=kept.turn, result=TurnResult(status="succeeded", answer="4"), trace=sink)
    assert [kind for _, kind in stored(kept.turn)[0]] == ["llm_call", "tool_call"]

    lost = running_turn(lapsed=False)
    sink = DatabaseTraceSink(lost.turn)
    AgentTurn.objects.filter(pk=lost.turn.pk).update(status="cancelled")
    a_step(sink, step=1, first_index=0)
    assert not services.agent_turn_finish(turn=lost.turn, result=TurnResult(status="succeeded"), trace=sink)
    assert AgentTurn.objects.get(pk=lost.turn.pk).status == "cancelled"


# --- system prompts: stored once per distinct text, read back whole ------------------------

# Longer than an event's string cap: a prompt stored apart is kept whole.
PROMPT = "You are a careful agent.\n\n## Skills\n" + "".join(f"- skill-{n}: does thing {n}\n" for n in range(1500))


def a_prompted_step(sink: DatabaseTraceSink, *, step: int, first_index: int, prompt: str = PROMPT) -> None:
    sink.emit("llm_call", {"step": step, "model": "scripted", "system_prompt": prompt, "sections": ["base"]})
    sink.checkpoint(first_index, {"kind": "model", "step": step})
    sink.emit("tool_call", {"step": step, "tool": "calculator"})
    sink.checkpoint(first_index + 1, {"kind": "tool", "step": step, "call_id": "c", "outcome": RAN})


def test_a_prompt_is_stored_once_and_each_event_references_it():
    assert len(PROMPT) > MAX_STRING
    turn = running_turn(lapsed=False).turn
    sink = DatabaseTraceSink(turn)
    a_prompted_step(sink, step=1, first_index=0)
    with CaptureQueriesContext(connection) as queries:
        a_prompted_step(sink, step=2, first_index=2)

    [prompt] = PromptText.objects.all()
    assert prompt.sha256 == hashlib.sha256(PROMPT.encode()).hexdigest() and prompt.text == PROMPT
    calls = TraceEvent.objects.filter(turn=turn, type="llm_call")
    assert [(call.prompt_id, "system_prompt" in call.data) for call in calls] == [(prompt.sha256, False)] * 2
    if connection.vendor == "postgresql":
        assert len(queries) == 1, "the prompt is written in the step's one statement"
        assert PROMPT not in queries[0]["sql"], "a prompt this turn stored already is sent by its key only"


def test_turns_with_the_same_prompt_share_it_and_another_prompt_is_stored_apart():
    for prompt in (PROMPT, PROMPT, "Another prompt."):
        sink = DatabaseTraceSink(running_turn(lapsed=False).turn)
        a_prompted_step(sink, step=1, first_index=0, prompt=prompt)

    assert sorted(PromptText.objects.values_list("text", flat=True)) == sorted([PROMPT, "Another prompt."])
    assert TraceEvent.objects.filter(type="llm_call").exclude(prompt=None).count() == 3


def test_the_last_step_written_with_the_outcome_stores_its_prompt():
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    sink.emit("llm_call", {"step": 1, "system_prompt": "The answer's prompt."})

    assert services.agent_turn_finish(turn=claimed.turn, result=TurnResult(status="succeeded", answer="4"), trace=sink)

    [event] = turn_trace_events(turn=claimed.turn)
    assert event.data["system_prompt"] == "The answer's prompt." and event.prompt_id


def test_a_lost_attempt_stores_no_prompt():
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(attempts=claimed.attempt + 1)  # taken over

    with pytest.raises(TurnLost):
        a_prompted_step(sink, step=1, first_index=0)

    assert not PromptText.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is PostgreSQL's path")
def test_two_turns_storing_the_same_prompt_at_once_store_it_once(transactional_db):
    first = DatabaseTraceSink(running_turn(lapsed=False).turn)
    second = DatabaseTraceSink(running_turn(lapsed=False).turn)

    def second_step() -> None:
        a_prompted_step(second, step=1, first_index=0)  # from the writer thread, on its own connection
        second.settle()
        connection.close()

    with transaction.atomic():
        a_prompted_step(first, step=1, first_index=0)  # stored, not yet committed
        writing = threading.Thread(target=second_step)
        writing.start()
        writing.join(0.5)
        assert writing.is_alive(), "the second write waits for the first one's prompt to commit or roll back"
    writing.join(30)

    [prompt] = PromptText.objects.all()
    calls = TraceEvent.objects.filter(type="llm_call")
    assert sorted(calls.values_list("turn_id", "prompt_id")) == sorted(
        [(first.turn.pk, prompt.sha256), (second.turn.pk, prompt.sha256)]
    )


def test_a_nul_in_a_prompt_is_stored_as_a_replacement_character():
    sink = DatabaseTraceSink(running_turn(lapsed=False).turn)
    a_prompted_step(sink, step=1, first_index=0, prompt="before\x00after")

    assert PromptText.objects.get().text == "before\ufffdafter"


def test_an_event_cannot_reference_a_prompt_that_is_not_stored():
    turn = running_turn(lapsed=False).turn
    with pytest.raises(IntegrityError), transaction.atomic():
        TraceEvent.objects.create(turn=turn, seq=1, type="llm_call", at=timezone.now(), data={}, prompt_id="0" * 64)
        connection.check_constraints(table_names=[TraceEvent._meta.db_table])  # as the commit would


def test_the_api_shows_each_prompt_whole_for_new_and_old_events_and_after_a_seq(make_token):
    owner = user_with_role("author", username="ada")
    turn = running_turn(lapsed=False, user=owner).turn
    # Stored before prompts were stored apart: the prompt inline in the event's data.
    TraceEvent.objects.create(
        turn=turn, seq=1, type="llm_call", at=timezone.now(), data={"step": 1, "system_prompt": "An old prompt."}
    )
    sink = DatabaseTraceSink(turn)
    assert sink.seq == 0
    sink.seq = 1
    a_prompted_step(sink, step=2, first_index=0)
    a_prompted_step(sink, step=3, first_index=2)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token([TokenScope.AGENT_RUN], user=owner)}")

    trace = client.get(f"/api/v1/agent/turns/{turn.pk}").json()["trace"]
    later = client.get(f"/api/v1/agent/turns/{turn.pk}?after=3").json()["trace"]

    prompts = [(event["seq"], event["data"]["system_prompt"]) for event in trace if event["type"] == "llm_call"]
    assert prompts == [(1, "An old prompt."), (2, PROMPT), (4, PROMPT)]
    assert [event["seq"] for event in later] == [4, 5] and later[0]["data"]["system_prompt"] == PROMPT
    assert later[0]["data"] == {"step": 3, "model": "scripted", "system_prompt": PROMPT, "sections": ["base"]}
