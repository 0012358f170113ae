"""Celery tasks and the worker's reaper. They take ids, claim the row, and call a service (STYLE.md)."""

from __future__ import annotations

import logging
import threading
import time

from celery import shared_task
from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections, connection

from agents.checks import NO_CGROUP_HINT, run_skill_memory_problem
from agents.evals import catalog_runner
from agents.evals import runner as evals
from agents.evals.model_check import catalog_watch_start, model_checks_advance
from agents.models import TurnOrigin
from agents.runtime.llm import TransientLLMError, complete, warm_up
from agents.runtime.providers import USAGE_TOKENIZER_MODEL, register_providers
from agents.turns import services
from agents.turns.lease import TurnLost
from agents.turns.store import RegistrySkillStore, resolution_for_turn
from agents.turns.tools import tool_registry
from agents.turns.trace import step_writer_warm_up
from registry.services.usage import usage_offers_roll_up, usage_statements_compile
from registry.services.webhooks import webhook_deliveries_requeue

logger = logging.getLogger(__name__)

MAX_LLM_RETRIES = 4


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=MAX_LLM_RETRIES)
def agent_turn_run_task(self, turn_id: str) -> None:
    claimed = services.agent_turn_claim(turn_id=turn_id)
    if claimed is None:
        # Finished, or running under a live lease (this is a duplicate or a late redelivery).
        # If its worker died, the reaper requeues it with a fresh message once the lease lapses.
        logger.info("turn %s is not queued; dropping this delivery", turn_id)
        return
    try:
        services.agent_turn_run(claimed=claimed)
    except TurnLost as lost:
        logger.warning("%s; leaving it to the attempt that holds it", lost)
    except TransientLLMError as error:
        if self.request.retries >= self.max_retries:
            services.agent_turn_fail(turn_id=turn_id, attempt=claimed.attempt, error=f"The model kept failing: {error}")
            return
        wait = min(2**self.request.retries, 30)
        reason = f"Retrying after a transient model error: {error}"
        services.agent_turn_requeue(claimed=claimed, reason=reason, wait=wait)
        raise self.retry(exc=error, countdown=wait) from error
    except Exception as error:
        # Anything unexpected still ends the turn with a readable error, not "running" forever.
        services.agent_turn_fail(
            turn_id=turn_id, attempt=claimed.attempt, error=f"The turn failed: {type(error).__name__}: {error}"
        )
        raise
    finally:
        if claimed.turn.origin == TurnOrigin.EVAL:
            _eval_turn_ended(turn_id)


def _eval_turn_ended(turn_id: str) -> None:
    """Grade the turn and send its run's next one now rather than at the reaper's round; a
    failure here leaves that to the reaper and never hides the turn's own outcome."""
    try:
        evals.eval_run_advance_for_turn(turn_id=turn_id)
        catalog_runner.catalog_eval_run_advance_for_turn(turn_id=turn_id)
    except Exception:
        logger.exception("could not advance the eval run of turn %s", turn_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def eval_run_advance_task(run_id: str) -> None:
    """Start an eval run: dispatch its first turns (each ended turn dispatches the next)."""
    evals.eval_run_advance(run_id=run_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def catalog_eval_run_advance_task(run_id: str) -> None:
    """Start a catalog eval run: dispatch its first turns (each ended turn dispatches the next)."""
    catalog_runner.catalog_eval_run_advance(run_id=run_id)


@shared_task
def catalog_watch_task() -> str:
    """Beat's drift watch (CATALOG_WATCH_CRON): production's suites on AGENT_MODEL as one watch;
    the reaper stores its report, and raises catalog.drift, once its runs have ended."""
    return str(catalog_watch_start().pk)


class TurnReaper:
    """The worker's own timer: every AGENT_TURN_REAPER_SECONDS, requeue or end the turns whose
    lease lapsed, remove dead processes' scratch folders, queue again the webhook deliveries that
    lost their message, and count the finished turns' queued offers into the rollups (reads roll
    up first anyway; this keeps the queue, and so the first read's wait, short when nobody reads
    for a while).

    A thread in the worker's main process rather than a periodic task: it needs no beat
    process or schedule file, works with the filesystem broker of `make run`, and cannot wait
    behind long turns for a free pool slot. Every worker runs one; the service's conditional
    updates make that safe."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="turn-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            try:
                report = services.agent_turns_reap()
                if report.requeued or report.failed or report.cancelled:
                    logger.warning("turn reaper: %s", report)
                services.scratch_dirs_sweep()
                evals.eval_runs_advance_later()  # runs whose turns ended while no worker advanced them
                catalog_runner.catalog_eval_runs_advance_later()
                model_checks_advance()  # model checks and drift watches whose runs have all ended
                usage_offers_roll_up()
                if requeued := webhook_deliveries_requeue():
                    logger.warning("requeued %d webhook deliveries that had lost their message", requeued)
            except Exception:  # the database may be down for a moment; try again next round
                logger.exception("turn reaper round failed")
            finally:
                connection.close()  # this thread's own connection; a fork must not inherit it open
            if self._stop.wait(settings.AGENT_TURN_REAPER_SECONDS):
                return


_reaper: TurnReaper | None = None


@worker_init.connect
def _warm_up(**kwargs) -> None:
    """Import litellm (~3 s, ~180 MB) and load the tokenizers a turn counts with (~2 s) once, in
    the main process before the pool forks: the pool processes share them, and no process's
    first turn pays for them (they would add seconds to the offline model's first turn). Doing it here
    rather than in worker_process_init also keeps it out of the pool's 4 s wait for a new
    child's "up" message. The import holds the interpreter for long stretches too, which would
    starve the lease thread of a running turn."""
    started = time.monotonic()
    register_providers()
    warm_up([settings.AGENT_MODEL, "offline", "scripted", USAGE_TOKENIZER_MODEL])
    logger.info("warmed up litellm and its tokenizers in %.1f s", time.monotonic() - started)
    if problem := run_skill_memory_problem():
        logger.warning("%s. %s", problem, NO_CGROUP_HINT)


@worker_process_init.connect
def _warm_up_process(**kwargs) -> None:
    """Do in each pool process, before it takes work, what its first turn would otherwise do
    once: build the resolve snapshot (skills, match index, compiled rules: ~0.4 s at 1,000
    skills) and with it this process's LISTEN connection that keeps it current; read a skill as
    read_skill does; build the tools' validators; compile the usage statements; make one call
    to the local `scripted` model (litellm sets up its call path on the first one); open the
    trace writer's connection. Not in
    `_warm_up` before the fork: the snapshot's listener and litellm's logging executor are
    threads, which a fork must not copy. A database that is down now only leaves the work to
    the first turn."""
    started = time.monotonic()
    try:
        resolution = resolution_for_turn(query="warm up", forced_skill=None)
        if resolution.skills:
            RegistrySkillStore().load(resolution.skills[0].name)
        for tool in tool_registry():
            tool.validator  # noqa: B018 - a cached property, built on first use
        usage_statements_compile()
        step_writer_warm_up()
        complete("scripted", [{"role": "user", "content": "warm up"}], [], script=[{"content": "warm"}])
    except Exception:
        logger.warning("could not warm up this pool process; its first turn does the rest", exc_info=True)
        return
    finally:
        connection.close()  # Celery's Django fixup closes it before each task anyway
    logger.info("warmed up this pool process's resolve snapshot and tools in %.2f s", time.monotonic() - started)


@task_prerun.connect
@task_postrun.connect
def _tidy_connections(**kwargs) -> None:
    """The connection outlives a task (settings.CELERY_DB_REUSE_MAX); as around a request, drop
    it when it is past CONN_MAX_AGE or broken (a restarted PostgreSQL) and health-check it
    before its next use."""
    close_old_connections()


@worker_ready.connect
def _start_reaper(sender=None, **kwargs) -> None:
    # A worker that serves only webhook deliveries (the Procfile's `webhooks`) leaves the rounds to
    # the turn workers: one process fewer writing to the broker (the filesystem broker of
    # `make run` can hand a reader a message file its writer has not filled yet).
    if sender is not None and sender.app.conf.task_default_queue not in sender.app.amqp.queues.consume_from:
        return
    global _reaper
    _reaper = TurnReaper()
    _reaper.start()


@worker_shutdown.connect
def _stop_reaper(**kwargs) -> None:
    if _reaper is not None:
        _reaper.stop()
