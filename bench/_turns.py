"""A running deployment for turn benchmarks: gunicorn, Celery worker processes, and a client that
submits turns over HTTP and waits for them to end.

The processes run from `app` (a checkout of this project; default: this one), so a bench can
measure another checkout's code, e.g. main before a change, against the same database, Redis
and machine in the same run. DATABASE_URL and REDIS_URL must be set (give the bench a database
and a Redis db of its own: the workers take every turn queued there).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

from bench._common import ROOT
from bench._services import Gunicorn

FINISHED = ("succeeded", "failed", "cancelled")


class WorkerProcess:
    """`celery worker` as the Procfile starts it (a prefork pool, or `solo` as the tests' worker),
    from `app`'s code, in its own session."""

    def __init__(
        self, *, env: dict[str, str], concurrency: int, app: Path = ROOT, queue: str | None = None, solo: bool = False
    ) -> None:
        pool = ["--pool", "solo"] if solo else ["--pool", "prefork", "--concurrency", str(concurrency)]
        queues = ["--queues", queue] if queue else []
        self.lines: deque[str] = deque(maxlen=500)
        self._ready = threading.Event()
        self.started = time.perf_counter()
        self.ready_seconds = float("nan")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO", *queues]
            + ["--without-gossip", "--without-mingle", *pool],
            cwd=app,
            env={**env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(app)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read_output, daemon=True).start()

    def _read_output(self) -> None:
        assert self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line)
            if " ready." in line and not self._ready.is_set():
                self.ready_seconds = time.perf_counter() - self.started
                self._ready.set()

    def wait_ready(self, timeout: float = 120) -> None:
        if not self._ready.wait(timeout):
            self.stop()
            raise SystemExit("the Celery worker did not become ready:\n" + "".join(self.lines))

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


class TurnClient:
    """Submits turns to the HTTP API and polls them until they end."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=self.headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"{}")
        finally:
            conn.close()

    def submit(self, **body: Any) -> str:
        status, answer = self._call("POST", "/api/v1/agent/turns", body)
        if status != 202:
            raise SystemExit(f"POST /api/v1/agent/turns answered {status}: {answer}")
        return answer["id"]

    def wait(self, turn_id: str, *, timeout: float = 120, interval: float = 0.005) -> dict[str, Any]:
        """The turn once it has ended (polling its status; the trace after `seq` 10**9 is empty,
        so a poll costs the same however long the trace grows)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = self._call("GET", f"/api/v1/agent/turns/{turn_id}?after=1000000000")
            if status != 200:
                raise SystemExit(f"GET turn {turn_id} answered {status}: {body}")
            if body["status"] in FINISHED:
                return body
            time.sleep(interval)
        raise SystemExit(f"turn {turn_id} did not end within {timeout} s")

    def run(self, **body: Any) -> tuple[float, dict[str, Any]]:
        """Submit one turn and wait for it: (seconds from submit to its end, the turn)."""
        started = time.perf_counter()
        turn = self.wait(self.submit(**body))
        return time.perf_counter() - started, turn


def bench_arguments(description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure first (e.g. /work/main)")
    return parser


def checkouts(baseline: Path | None) -> list[tuple[str, Path]]:
    """What to measure, in order: the baseline checkout if one was given, then this one."""
    return ([("baseline", baseline.resolve())] if baseline else []) + [("this checkout", ROOT)]


def bench_env(name: str) -> dict[str, str]:
    """The environment the web and worker processes run with (production settings)."""
    for variable in ("DATABASE_URL", "REDIS_URL"):
        if not os.environ.get(variable):
            raise SystemExit(f"{variable} must be set: this bench runs real web and worker processes")
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "turn-bench-only-secret",
        "DEBUG": "false",
        "CONN_MAX_AGE": "60",
        "API_THROTTLE_RATE": "off",
        "AGENT_ALLOW_SCRIPTED": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "VAR_DIR": f"/tmp/skill-bench-{name}-{os.getpid()}",
    }


def prepare_database(env: dict[str, str]) -> tuple[str, int]:
    """Migrate the bench database; a token that may run turns, and how many skills it holds."""
    os.environ.update(env)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from registry import selectors
    from registry.services.tokens import api_token_create

    get_user_model().objects.get_or_create(username="turn-bench", defaults={"is_superuser": True, "is_staff": True})
    _, token = api_token_create(name=f"turn-bench-{uuid.uuid4().hex[:8]}", username="turn-bench", scopes=["agent:run"])
    skills = len(selectors.effective_skills())
    connections.close_all()
    return token, skills


class Deployment:
    """gunicorn plus `workers` Celery worker processes of `concurrency` each, all from `app`."""

    def __init__(
        self, *, app: Path, env: dict[str, str], token: str, web: int = 2, workers: int = 1, concurrency: int = 1
    ) -> None:
        self.app, self.env, self.token = app, env, token
        self.web_processes, self.worker_count, self.concurrency = web, workers, concurrency
        self.gunicorn: Gunicorn | None = None
        self.workers: list[WorkerProcess] = []

    def __enter__(self) -> Deployment:
        self.gunicorn = Gunicorn(
            env={**self.env, "PYTHONPATH": str(self.app)}, workers=self.web_processes, root=self.app
        ).start()
        self.start_workers()
        return self

    def start_workers(self) -> None:
        self.workers = [
            WorkerProcess(app=self.app, env=self.env, concurrency=self.concurrency) for _ in range(self.worker_count)
        ]
        for worker in self.workers:
            worker.wait_ready()

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []

    def __exit__(self, *exc_info: object) -> None:
        self.stop_workers()
        if self.gunicorn is not None:
            self.gunicorn.stop()

    @property
    def client(self) -> TurnClient:
        assert self.gunicorn is not None
        return TurnClient(self.gunicorn.port, self.token)
