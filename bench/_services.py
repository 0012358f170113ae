"""Private Redis, PostgreSQL and gunicorn processes for load and fault runs.

Each runs on a free port in a temporary folder and is stopped only by its own handle, so a
run that kills Redis or restarts PostgreSQL never touches the shared servers (5432, 6379) that
other test runs use. The bench scripts and the fault tests share these.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)), Path("/usr/bin"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_port(port: int, *, timeout: float, process: subprocess.Popen | None = None, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


class PrivateRedis:
    """redis-server with an append-only file, so a restart finds what was queued before a kill."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="private-redis-"))
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        command += ["--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, timeout=15, process=self.process, what="redis-server")
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would stop it."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class PrivatePostgres:
    """A throw-away PostgreSQL cluster owned by the `postgres` user (initdb refuses root)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="private-pg-"))
        self.data = self.folder / "data"
        shutil.chown(self.folder, "postgres", "postgres")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, timeout=120)

    def start(self) -> PrivatePostgres:
        if not self.data.exists():
            self._as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start"
        )
        _wait_port(self.port, timeout=30, what="postgres")
        return self

    def stop(self, mode: str = "fast") -> None:
        """`fast` disconnects every client (what a restart does to the app's connections);
        `immediate` is a crash."""
        if (self.data / "postmaster.pid").exists():
            self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        self._as_postgres(str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def close(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


class Gunicorn:
    """The app under gunicorn's sync workers, as production runs it, on a free local port."""

    def __init__(
        self, *, env: dict[str, str], workers: int = 2, root: Path = ROOT, extra_args: tuple[str, ...] = ()
    ) -> None:
        self.port = free_port()
        self.extra_args = extra_args  # more gunicorn options (an access log, threads)
        self.root = root  # the checkout whose code it serves
        self.env = env
        self.workers = workers
        self.process: subprocess.Popen | None = None
        self.log = Path(tempfile.mkstemp(prefix="gunicorn-", suffix=".log")[1])

    def start(self, timeout: float = 60) -> Gunicorn:
        command = [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{self.port}"]
        command += ["--workers", str(self.workers), "--worker-class", "sync", "--log-level", "warning"]
        command += self.extra_args
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.output()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/login/")
                conn.getresponse().read()
                conn.close()
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not come up:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.log.unlink(missing_ok=True)
