"""Webhook deliveries never slow turns: they run on a Celery queue of their own, served by a worker
of their own (the Procfile's `webhooks`), so two receivers that trickle their answer a byte every
2 s hold delivery processes while a turn queued after them runs on the turn worker at once."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings

from agents.models import FINISHED_STATUSES, AgentTurn, TurnStatus
from agents.turns import services
from registry.models import DeliveryStatus, WebhookDelivery, WebhookEvent
from registry.services.webhooks import webhook_attempt_limit, webhook_create
from registry.tasks import webhook_delivery_send_task
from tests.factories import publish, user_with_role
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TRICKLE_BYTES = 10
TRICKLE_EVERY = 2.0
TRICKLE_SECONDS = TRICKLE_BYTES * TRICKLE_EVERY
# Each read waits at most 2 s, within this; the attempt's limit (3x + 5 s) outlasts the trickle.
WORKER_ENV = {"WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true", "WEBHOOK_TIMEOUT_SECONDS": "10"}


class TricklingReceiver:
    """Answers 200 with a body of TRICKLE_BYTES bytes, one every TRICKLE_EVERY seconds; records
    when each request arrived and when its answer was complete."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.finished: list[float] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                receiver.arrived.append(time.monotonic())
                self.send_response(200)
                self.send_header("Content-Length", str(TRICKLE_BYTES))
                self.send_header("Connection", "close")
                self.end_headers()
                for _ in range(TRICKLE_BYTES):
                    time.sleep(TRICKLE_EVERY)
                    self.wfile.write(b".")
                    self.wfile.flush()
                receiver.finished.append(time.monotonic())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers():
    running = [TricklingReceiver(), TricklingReceiver()]
    yield running
    for receiver in running:
        receiver.close()


@pytest.fixture
def workers(worker_exits):
    """`make run`'s two workers: turns on the default queue (one process, so a delivery taken
    there would hold every turn behind it), deliveries on theirs."""
    turns = WorkerProcess(queues=[settings.CELERY_TASK_DEFAULT_QUEUE], extra_env=WORKER_ENV).start()
    deliveries = WorkerProcess(queues=[settings.WEBHOOK_QUEUE], concurrency=2, extra_env=WORKER_ENV).start()
    yield turns, deliveries
    worker_exits(turns)
    worker_exits(deliveries)


@pytest.fixture
def attempt_limits_as_the_workers(settings, monkeypatch):
    """The test process reads the workers' WEBHOOK_TIMEOUT_SECONDS too, as `make run`'s web and
    workers read one configuration. It matters beyond this process: once any test module has
    imported registry.tasks (a whole run does), Celery's send_task copies the registered task's
    time limits, fixed at that import from this process's settings (5 s: a 20 s limit), into the
    message, and the worker obeys the message's over its own (35 s). Every attempt was then cut
    at 20 s, just short of the 20 s trickle, and retried until the wait gave up."""
    settings.WEBHOOK_TIMEOUT_SECONDS = float(WORKER_ENV["WEBHOOK_TIMEOUT_SECONDS"])
    monkeypatch.setattr(webhook_delivery_send_task, "soft_time_limit", webhook_attempt_limit())
    monkeypatch.setattr(webhook_delivery_send_task, "time_limit", webhook_attempt_limit() + 10)
    # The task caches its send options on first use (Task._get_exec_options): an earlier module's
    # publish would otherwise have fixed the 20 s limit already.
    monkeypatch.setattr(webhook_delivery_send_task, "_exec_options", None)


def test_a_turn_runs_while_slow_receivers_hold_every_delivery(
    receivers, workers, settings, attempt_limits_as_the_workers
):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    turns_worker, deliveries_worker = workers
    for receiver in receivers:
        webhook_create(url=receiver.url, events=[WebhookEvent.SKILL_PUBLISHED])
    publish("slow-news", description="Published while two receivers trickle their answers.")
    try:
        wait_for(lambda: all(receiver.arrived for receiver in receivers), message="both deliveries in flight")
    except AssertionError:
        raise AssertionError("not delivered:\n" + deliveries_worker.output()[-5000:]) from None

    queued = time.monotonic()
    turn = services.agent_turn_create(
        user=user_with_role("author"), message="hello", model="scripted", script=[{"content": "Hello."}]
    )
    wait_for(lambda: AgentTurn.objects.get(pk=turn.pk).status in FINISHED_STATUSES, message="the turn")
    ended = time.monotonic()

    assert AgentTurn.objects.get(pk=turn.pk).status == TurnStatus.SUCCEEDED, turns_worker.output()[-3000:]
    # The turn ended while both receivers were still trickling: no delivery stood in its way.
    assert not any(receiver.finished for receiver in receivers)
    assert ended - queued < TRICKLE_SECONDS / 2
    # And the deliveries went on to complete on their own worker.
    try:
        wait_for(
            lambda: WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 2,
            message="both deliveries",
        )
    except AssertionError as error:
        rows = list(WebhookDelivery.objects.values("status", "attempts", "last_status", "last_error"))
        raise AssertionError(f"{error}: {rows}\n{deliveries_worker.output()[-5000:]}") from None
    assert all(min(receiver.finished) - min(receiver.arrived) >= TRICKLE_SECONDS for receiver in receivers)
    assert "webhook_delivery_send_task[" not in turns_worker.output()  # never received there
