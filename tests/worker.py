"""A real Celery worker process for integration tests, started against the test database.

The worker is a separate process (as in production): it only sees committed data, so tests
using it need `django_db(transaction=True)`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent

# How long a test waits for a worker to start or a turn to end before it fails. A turn that takes
# a second on an idle machine can wait minutes for a CPU on a busy CI runner or beside other test
# runs; the waits end as soon as the condition holds, so a generous bound costs a passing run nothing.
WORKER_WAIT_SECONDS = 240


def _database_url_for_tests() -> str:
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}{port}/{db['NAME']}"


# How long a worker may take to answer a remote-control command (consume a queue or stop consuming
# it, say what it holds). An idle worker answers in milliseconds; one that does not answer in time
# is busy or stuck, and is restarted instead.
CONTROL_SECONDS = 5
REDIS_BRPOP_SECONDS = 1  # kombu's Redis transport: how long one blocking read of the queues lasts


def queues_purge(queues: list[str]) -> None:
    """Drop every message waiting in `queues`: tasks an earlier module queued with no worker to
    run them (or that a stopped worker put back) are not for the next module's worker."""
    import kombu.exceptions

    from config.celery import app

    with app.connection_for_write() as connection:
        try:
            connection.ensure_connection(max_retries=1)
        except kombu.exceptions.OperationalError:
            return  # no broker, no queue: the tests that need one say so
        for queue in queues:
            connection.default_channel.queue_purge(queue)


class WorkerProcess:
    # Every worker a test process starts reads its process's queues. The default worker (the test
    # settings, shared by the modules that ask for conftest's `worker`) would take the tasks meant
    # for a worker started with other settings and run them with its own, so starting any other
    # stops it; the next module asking for `worker` starts it again.
    _default: WorkerProcess | None = None

    def __init__(
        self,
        *,
        concurrency: int = 1,
        extra_env: dict[str, str] | None = None,
        default: bool = False,
        queues: list[str] | None = None,
    ) -> None:
        self.concurrency = concurrency
        # Unless told: the turns' queue and the deliveries', as `make run`'s two workers serve them.
        self.queues = queues or [settings.CELERY_TASK_DEFAULT_QUEUE, settings.WEBHOOK_QUEUE]
        self.extra_env = extra_env or {}
        self.default = default
        self.process: subprocess.Popen | None = None
        self.lines: deque[str] = deque(maxlen=2000)
        self._ready = threading.Event()
        self._quitting = False
        self.idle = False  # set aside: frozen, consuming nothing, holding nothing (`set_aside`)

    def start(self, timeout: float = WORKER_WAIT_SECONDS) -> WorkerProcess:
        self.idle = False
        if self.default:
            WorkerProcess._default = self
        elif WorkerProcess._default is not None:
            WorkerProcess._default.stop()
        self.lines.clear()
        self._ready = threading.Event()
        self._quitting = False
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.test_settings",
            "DATABASE_URL": _database_url_for_tests(),
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        pool = (
            ["--pool", "solo"]
            if self.concurrency == 1
            else ["--pool", "prefork", "--concurrency", str(self.concurrency)]
        )
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
                "--queues",
                ",".join(self.queues),
                "--hostname",
                self.nodename,
                "--without-gossip",
                "--without-mingle",
                *pool,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read_output, daemon=True).start()
        if not self._ready.wait(timeout):
            self.stop()
            raise RuntimeError("Celery worker did not become ready:\n" + self.output())
        return self

    @property
    def nodename(self) -> str:
        """The worker's Celery node name, which remote-control commands are addressed to: two
        workers of one test are two nodes."""
        return f"test-{os.getpid()}-{id(self):x}@{socket.gethostname()}"

    def serve(self) -> WorkerProcess:
        """Run the module's tasks: a worker set aside by an earlier module (`set_aside`) wakes and
        consumes its queues again; otherwise one starts. (Each module starts with the queues
        emptied: conftest's `_queues_emptied`.)"""
        if self.idle and self.running:
            os.killpg(self.main_pid, signal.SIGCONT)
            self.idle = False
            if self.consume(True):
                return self
        self.stop()
        return self.start()

    def set_aside(self) -> None:
        """Between modules: stop consuming, then freeze (SIGSTOP) until the next module that asks
        for a worker (`serve`), as if no worker ran. Consuming, it would take the tasks later
        modules queue; awake, its reaper thread would act on their data every few seconds
        (requeue their turns, advance their eval runs, roll up their usage). It freezes holding
        nothing: the module's data is gone (each test's is rolled back or flushed), so its reaper
        is in no transaction. A worker that does not confirm in time (a task still running) or
        holds a task for later (a retry's countdown, a message it prefetched) quits instead: it
        would run that task during a later module."""
        if not self.running:
            return
        if self.consume(False) and self._blocked_reads_returned() and self._holds_nothing():
            os.killpg(self.main_pid, signal.SIGSTOP)
            self.idle = True
        else:
            self.quit()

    def close(self) -> None:
        """Let the worker go without waiting: one set aside (frozen, holding no task, consuming
        no queue) is killed outright; any other quits (`quit`)."""
        if self.idle:
            self.kill()
        else:
            self.quit()

    def consume(self, consuming: bool) -> bool:
        """Start or stop consuming every one of the worker's queues (Celery's remote control);
        False when the worker did not confirm within CONTROL_SECONDS."""
        from config.celery import app

        command = app.control.add_consumer if consuming else app.control.cancel_consumer
        return all(
            command(queue, destination=[self.nodename], reply=True, timeout=CONTROL_SECONDS, limit=1)
            for queue in self.queues
        )

    @staticmethod
    def _blocked_reads_returned() -> bool:
        """True once a read the worker sent before it stopped consuming has returned. On Redis a
        worker waits for messages with BRPOP, which Redis keeps blocked for up to kombu's
        `brpop_timeout` (1 s): frozen while one is pending, the worker would still take the next
        message pushed to its queue from Redis and never run it (a later module's turn would
        stay queued). Nothing tells when that read has come back, so this waits it out."""
        if settings.CELERY_BROKER_URL.startswith("redis"):
            time.sleep(REDIS_BRPOP_SECONDS + 0.5)
        return True

    def _holds_nothing(self) -> bool:
        from config.celery import app

        inspect = app.control.inspect(destination=[self.nodename], timeout=CONTROL_SECONDS, limit=1)
        answers = [inspect.scheduled(), inspect.reserved(), inspect.active()]
        return all(answer and not any(answer.values()) for answer in answers)

    def _read_output(self) -> None:
        assert self.process and self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line)
            if " ready." in line:
                self._ready.set()

    def output(self) -> str:
        return "".join(self.lines)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def main_pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def pool_pids(self) -> list[int]:
        """The prefork pool's child processes (none with the solo pool)."""
        children = Path(f"/proc/{self.main_pid}/task/{self.main_pid}/children")
        return [int(pid) for pid in children.read_text().split()] if children.exists() else []

    def kill_main(self) -> None:
        """SIGKILL the main process only, as the OOM killer might; Celery gives pool children
        PR_SET_PDEATHSIG, so they die with it."""
        assert self.process is not None
        os.kill(self.main_pid, signal.SIGKILL)
        self.process.wait(10)

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children), as a crash would."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def quit(self) -> None:
        """Begin the shutdown `stop` waits for, and return: the worker lets go of the broker
        within a second, then its interpreter takes as long again to exit, which the next tests
        need not wait out. `stop` afterwards only waits for the exit."""
        # SIGQUIT is Celery's cold shutdown: tests stop workers between tasks, so nothing is
        # lost, and a warm shutdown would wait out broker timeouts first. A second one would
        # cut the shutdown short, hence sent once.
        if self.process and self.process.poll() is None and not self._quitting:
            os.killpg(self.process.pid, signal.SIGQUIT)
            self._quitting = True

    def stop(self) -> None:
        if self.idle:
            self.kill()
        if self.process and self.process.poll() is None:
            self.quit()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(predicate, *, timeout: float = WORKER_WAIT_SECONDS, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
