"""How tasks are sent: a message carries no time limits, so the worker's own configuration decides
them (config/celery.py)."""

from __future__ import annotations

import pytest
from celery.signals import before_task_publish
from django.conf import settings

from agents.tasks import agent_turn_run_task
from registry.tasks import version_scan_task, webhook_delivery_send_task
from tests.worker import queues_purge


@pytest.fixture
def sent_headers():
    """The headers of every message this process sends, to a queue of its own (purged after)."""
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}-sent-headers"
    sent: list[dict] = []

    def record(headers=None, **_):
        sent.append(dict(headers or {}))

    before_task_publish.connect(record, weak=False)
    try:
        yield queue, sent
    finally:
        before_task_publish.disconnect(record)
        queues_purge([queue])


@pytest.mark.parametrize("task", [webhook_delivery_send_task, version_scan_task, agent_turn_run_task])
def test_a_sent_task_carries_no_time_limit_so_the_worker_decides(sent_headers, task):
    queue, headers = sent_headers
    # The sender knows limits of its own (the webhook task's decorator, the settings' defaults)...
    assert task.soft_time_limit and task.time_limit
    task.apply_async((0,), queue=queue)
    # ...and keeps them to itself: a worker obeys a message's limits over its configuration.
    assert [list(h["timelimit"]) for h in headers] == [[None, None]]


def test_a_caller_may_still_set_limits_for_one_message(sent_headers):
    queue, headers = sent_headers
    version_scan_task.apply_async((0,), queue=queue, time_limit=9, soft_time_limit=7)
    assert [list(h["timelimit"]) for h in headers] == [[9, 7]]
