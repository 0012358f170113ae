"""Leases, the reaper, cancel and fencing, without a worker (the fault tests in
test_turn_faults.py kill real ones)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import AgentTurn, TraceEvent, TurnCheckpoint, TurnStatus
from agents.runtime.types import TurnResult
from agents.turns import services
from agents.turns.lease import LeaseKeeper, TurnLost
from agents.turns.trace import DatabaseTraceSink
from registry.models import UsageEvent
from tests.factories import UserFactory
from tests.worker import wait_for

pytestmark = pytest.mark.django_db

SCRIPT = [{"content": "hello", "tool_calls": []}]


def queued_turn(user=None) -> AgentTurn:
    return services.agent_turn_create(user=user or UserFactory(), message="x", model="scripted", script=SCRIPT)


def running_turn(*, lapsed: bool, user=None) -> services.ClaimedTurn:
    claimed = services.agent_turn_claim(turn_id=str(queued_turn(user).pk))
    assert claimed is not None
    if lapsed:
        AgentTurn.objects.filter(pk=claimed.turn.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    return claimed


def status(turn_id) -> str:
    return AgentTurn.objects.get(pk=turn_id).status


def test_the_reaper_requeues_a_running_turn_whose_lease_lapsed_once(django_capture_on_commit_callbacks):
    claimed = running_turn(lapsed=True)

    with django_capture_on_commit_callbacks(execute=False) as sent:
        first = services.agent_turns_reap()
        second = services.agent_turns_reap()

    turn = AgentTurn.objects.get(pk=claimed.turn.pk)
    assert first.requeued == [str(turn.pk)] and second.requeued == []
    assert len(sent) == 1, "one fresh message, however many reapers look"
    assert (turn.status, turn.takeovers, turn.attempts) == ("queued", 1, 1)
    assert list(TraceEvent.objects.filter(turn=turn).values_list("type", flat=True)) == ["turn_requeued"]
    again = services.agent_turn_claim(turn_id=str(turn.pk))
    assert again is not None and again.attempt == 2


def test_the_reaper_leaves_a_turn_whose_lease_is_live_alone():
    claimed = running_turn(lapsed=False)
    assert services.agent_turns_reap().requeued == []
    assert status(claimed.turn.pk) == "running"


def test_the_reaper_fails_a_turn_that_lost_its_worker_too_many_times(settings):
    settings.AGENT_TURN_MAX_TAKEOVERS = 2
    claimed = running_turn(lapsed=True)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(takeovers=2)

    report = services.agent_turns_reap()

    turn = AgentTurn.objects.get(pk=claimed.turn.pk)
    assert report.failed == [str(turn.pk)]
    assert turn.status == "failed" and "stopped responding 3 times" in turn.error and turn.finished_at


def test_the_reaper_cancels_a_dead_turn_that_was_asked_to_cancel():
    claimed = running_turn(lapsed=True)
    AgentTurn.objects.filter(pk=claimed.turn.pk).update(cancel_requested=True)
    assert services.agent_turns_reap().cancelled == [str(claimed.turn.pk)]
    assert status(claimed.turn.pk) == "cancelled"


def test_a_queued_turn_not_claimed_in_time_is_sent_again_with_a_growing_wait(django_capture_on_commit_callbacks):
    turn = queued_turn()
    created = timezone.now() - timedelta(seconds=600)
    AgentTurn.objects.filter(pk=turn.pk).update(created_at=created, lease_expires_at=timezone.now())

    report = services.agent_turns_reap()

    turn.refresh_from_db()
    assert report.redispatched == [str(turn.pk)] and turn.status == "queued"
    assert turn.lease_expires_at - timezone.now() > timedelta(seconds=590), "waits as long as it has waited"
    assert services.agent_turns_reap().redispatched == []


def cancel(turn: AgentTurn, user):
    client = APIClient()
    client.force_authenticate(user)
    return client.post(f"/api/v1/agent/turns/{turn.pk}/cancel")


def test_cancel_ends_a_running_turn_whose_worker_died_at_once():
    user = UserFactory(is_superuser=True)
    claimed = running_turn(lapsed=True, user=user)

    response = cancel(claimed.turn, user)

    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    turn = AgentTurn.objects.get(pk=claimed.turn.pk)
    assert turn.status == "cancelled" and turn.finished_at and "stopped responding" in turn.error


def test_cancel_of_a_live_running_turn_is_requested_and_a_finished_turn_is_a_409():
    user = UserFactory(is_superuser=True)
    claimed = running_turn(lapsed=False, user=user)

    response = cancel(claimed.turn, user)
    assert response.status_code == 202
    assert response.json() == {"id": str(claimed.turn.pk), "status": "running", "cancel_requested": True}

    AgentTurn.objects.filter(pk=claimed.turn.pk).update(status=TurnStatus.SUCCEEDED)
    finished = cancel(claimed.turn, user)
    assert finished.status_code == 409 and finished.json()["fields"] == {"turn": "succeeded"}


def test_an_attempt_that_lost_its_turn_writes_nothing():
    claimed = running_turn(lapsed=True)
    sink = DatabaseTraceSink(claimed.turn)
    services.agent_turns_reap()
    services.agent_turn_claim(turn_id=str(claimed.turn.pk))  # a second attempt holds it now

    sink.emit("llm_call", {"step": 1})
    sink.checkpoint(0, {"kind": "model", "step": 1})
    with pytest.raises(TurnLost):
        sink.checkpoint(1, {"kind": "tool", "step": 1, "outcome": {"ok": True}})
    finished = services.agent_turn_finish(
        turn=claimed.turn, result=TurnResult(status="succeeded", answer="late"), trace=sink
    )

    assert finished is False
    turn = AgentTurn.objects.get(pk=claimed.turn.pk)
    assert (turn.status, turn.answer) == ("running", "")
    assert not TurnCheckpoint.objects.filter(turn=turn).exists()
    assert list(TraceEvent.objects.filter(turn=turn).values_list("type", flat=True)) == ["turn_requeued"]
    assert not UsageEvent.objects.filter(turn=turn).exists()


def test_the_lease_keeper_notices_when_its_attempt_lost_the_turn(settings, transactional_db):
    settings.AGENT_TURN_LEASE_SECONDS = 0.3
    claimed = running_turn(lapsed=False)
    with LeaseKeeper(turn_id=claimed.turn.pk, attempt=claimed.attempt, max_seconds=30) as lease:
        AgentTurn.objects.filter(pk=claimed.turn.pk).update(status=TurnStatus.CANCELLED)
        wait_for(lambda: lease.lost, message="the lease keeper to notice")
    with pytest.raises(TurnLost):
        DatabaseTraceSink(claimed.turn, lease=lease).should_cancel()


def test_trace_text_with_a_nul_character_is_stored():
    claimed = running_turn(lapsed=False)
    sink = DatabaseTraceSink(claimed.turn)
    sink.emit("tool_call", {"result": "before\x00after"})
    sink.checkpoint(0, {"kind": "tool", "outcome": {"content": "a\x00b"}})
    assert TraceEvent.objects.get(turn=claimed.turn).data["result"] == "before\ufffdafter"


def test_the_scratch_root_is_outside_the_private_var_dir_and_refused_when_others_could_write_it(settings, tmp_path):
    from django.conf import settings as live

    assert not live.AGENT_SCRATCH_ROOT.is_relative_to(live.VAR_DIR)  # uid 65534 cannot enter var/ (0700)
    settings.AGENT_SCRATCH_ROOT = tmp_path / "scratch"
    assert services._scratch_root() == tmp_path / "scratch"
    (tmp_path / "scratch").chmod(0o777)
    with pytest.raises(PermissionError, match="AGENT_SCRATCH_ROOT"):
        services._scratch_root()
    (tmp_path / "elsewhere").mkdir()
    settings.AGENT_SCRATCH_ROOT = tmp_path / "link"
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PermissionError, match="AGENT_SCRATCH_ROOT"):
        services._scratch_root()


def test_the_sweep_removes_scratch_folders_of_dead_processes_only(settings, tmp_path):
    settings.AGENT_SCRATCH_ROOT = tmp_path
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f"{dead.pid}-turn" / "skill-run-x").mkdir(parents=True)
    (tmp_path / f"{os.getpid()}-turn").mkdir()

    assert services.scratch_dirs_sweep() == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{os.getpid()}-turn"]
