"""Celery tasks. They take ids, claim the row, and call a service (STYLE.md)."""

from __future__ import annotations

import logging

from celery import Task, shared_task

from agents import services
from agents.runtime.llm import TransientLLMError

logger = logging.getLogger(__name__)

MAX_LLM_RETRIES = 4


class TurnTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        # Anything unexpected still ends the turn with a readable error, not "running" forever.
        services.agent_turn_fail(turn_id=args[0], error=f"The turn failed: {type(exc).__name__}: {exc}")


@shared_task(bind=True, base=TurnTask, acks_late=True, reject_on_worker_lost=True, max_retries=MAX_LLM_RETRIES)
def agent_turn_run_task(self, turn_id: str) -> None:
    turn = services.agent_turn_claim(turn_id=turn_id)
    if turn is None:
        wait = services.agent_turn_lease_remaining(turn_id=turn_id)
        if wait is not None:
            # Another worker holds the turn, and may have died holding it (this delivery is the
            # broker giving its message back). Dropping the message could strand the turn, so
            # look again once the lease could have lapsed; a fresh message, not a retry, so the
            # model-error retry budget stays whole.
            logger.info("turn %s is held by another worker; looking again in %.0f s", turn_id, wait + 1)
            agent_turn_run_task.apply_async((turn_id,), countdown=wait + 1)
        else:
            logger.info("turn %s is finished or queued elsewhere; skipping this delivery", turn_id)
        return
    try:
        services.agent_turn_run(turn=turn)
    except TransientLLMError as error:
        if self.request.retries >= self.max_retries:
            services.agent_turn_fail(turn_id=turn_id, error=f"The model kept failing: {error}")
            return
        services.agent_turn_requeue(turn=turn, reason=f"Retrying after a transient model error: {error}")
        raise self.retry(exc=error, countdown=min(2**self.request.retries, 30)) from error
