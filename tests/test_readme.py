"""The README's and the docs' examples run as written against a fresh `make run` so they cannot drift.

The extraction rule (also stated in README.md and docs/development.md): every fenced block whose
info string is exactly `sh` is an example that must work as written, on a fresh clone, after
`make run`, from the repository root. The blocks are collected from README.md first, then from the
pages of docs/ in the order of mkdocs.yml's nav, and run in that order in one bash session (a
variable set in one block, like `$TOKEN`, is there for the next), with `set -euo pipefail` and
`curl` made to fail on an HTTP error (`--fail-with-body`), so an example that errors fails this
test. Blocks fenced `shell` are shown but not run (the `make` commands themselves, and examples
that need other settings, which the text beside them names).

How: the tracked files are copied to a temporary directory with the test run's `.venv` linked in,
`make run PORT=<free port>` starts there with its defaults, on a database of its own (a fresh
PostgreSQL database when DATABASE_URL points at PostgreSQL, else the default SQLite file under
the copy's var/), then the examples run with the copy as the working directory, and the whole
process group is stopped.

The docs are also built as the site (`mkdocs build --strict`), so a link to a page that does not
exist fails here, and every page must be in the nav, so none is left out of the examples' order.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import environ
import pytest
import yaml

from registry.models import TokenScope

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS_CONFIG = ROOT / "mkdocs.yml"
EXAMPLE_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)
README_BASE_URL = "http://127.0.0.1:8000"

# What the instance must not inherit from the test run: the test settings, and the test run's
# database and Redis (a make-run worker on the same Redis database would share queues and cache
# keys with the suite; without REDIS_URL it uses its own filesystem broker and memory cache).
NOT_INHERITED = (
    "DJANGO_SETTINGS_MODULE",
    "TESTING",
    "DEBUG",
    "DATABASE_URL",
    "REDIS_URL",
    "VAR_DIR",
    "PORT",
    "AGENT_MODEL",
    "AGENT_MODELS",
    "AGENT_ALLOW_SCRIPTED",
    "DJANGO_SUPERUSER_USERNAME",
    "DJANGO_SUPERUSER_PASSWORD",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
)


def nav_pages(nav: list) -> list[str]:
    """The pages of a mkdocs nav, in order: each entry is a path, or a title mapped to a path or
    to a list of entries."""
    pages: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def documentation_pages() -> list[Path]:
    """README.md, then the docs pages in nav order: the order the examples run in."""
    nav = yaml.safe_load(MKDOCS_CONFIG.read_text())["nav"]
    return [README, *(DOCS / page for page in nav_pages(nav))]


def readme_examples() -> list[str]:
    return [block for page in documentation_pages() for block in EXAMPLE_BLOCK.findall(page.read_text())]


def test_every_docs_page_is_in_the_nav_so_its_examples_run():
    in_nav = set(documentation_pages())
    assert sorted(str(page.relative_to(ROOT)) for page in DOCS.rglob("*.md") if page not in in_nav) == []
    assert all(page.is_file() for page in in_nav)


def test_the_readme_stays_a_first_page():
    assert len(README.read_text().splitlines()) <= 400


def test_the_docs_build_as_a_site_with_no_broken_link(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(MKDOCS_CONFIG),
            "--site-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "operators" / "configuration" / "index.html").is_file()


def test_the_readme_has_examples_for_the_cli_the_api_and_a_turn():
    script = "\n".join(readme_examples())
    for expected in (
        "source .venv/bin/activate",
        "python manage.py skills export",
        "python manage.py tokens create",
        "python manage.py tokens list",
        "/api/v1/agent/turns",
        "/api/v1/usage",
        "/api/v1/analytics/skills",
    ):
        assert expected in script
    # Every address is `${BASE:-...}`, so the examples work as written against any PORT.
    assert README_BASE_URL not in script.replace("${BASE:-" + README_BASE_URL + "}", "")
    # Every CLI line in a runnable block works without a path to the venv: the README activates it
    # before its first command, and its blocks run first.
    readme = "\n".join(EXAMPLE_BLOCK.findall(README.read_text()))
    assert script.startswith(readme)
    assert readme.index("source .venv/bin/activate") < readme.index("python manage.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_tracked_files(target: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())


@pytest.fixture
def instance_database() -> Iterator[str | None]:
    """A DATABASE_URL for the instance: a new PostgreSQL database beside the test run's, dropped
    afterwards; None (make run's SQLite default, in the copy) when the tests run on SQLite."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield None
        return
    import psycopg

    config = environ.Env.db_url_config(url)
    name = f"{config['NAME']}_readme"[:63]
    server = psycopg.connect(
        dbname="postgres",
        user=config.get("USER") or None,
        password=config.get("PASSWORD") or None,
        host=config.get("HOST") or None,
        port=config.get("PORT") or None,
        autocommit=True,
    )
    with server:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        server.execute(f'CREATE DATABASE "{name}"')
        try:
            yield url.rsplit("/", 1)[0] + "/" + name
        finally:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class MakeRun:
    """`make run` in a copy of the repository, as a process group of its own."""

    def __init__(self, repo: Path, env: dict[str, str], port: int) -> None:
        self.base_url = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        # The .venv is the one this test runs in, already installed: `-o` keeps make from
        # reinstalling into it (in CI it is fresh anyway).
        self.process = subprocess.Popen(
            ["make", "-o", ".venv/.installed", "run", f"PORT={port}"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines[-200:])

    def wait_healthy(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"make run exited with {self.process.returncode}:\n{self.output}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"make run was not healthy after {timeout} s:\n{self.output}")

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            # Honcho exits first; gunicorn's and celery's children leave after it.
            deadline = time.monotonic() + wait
            while self._group_alive() and time.monotonic() < deadline:
                time.sleep(0.1)

    def _group_alive(self) -> bool:
        self.process.poll()  # reap honcho: a zombie still counts as the group's member
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return True


# Setting up a fresh database, starting web and worker and running every example takes minutes
# on a busy 2-core machine: more than the suite's default per-test limit.
@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_every_readme_example_runs_against_a_fresh_make_run(tmp_path, instance_database):
    repo = tmp_path / "repo"
    copy_tracked_files(repo)
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    if instance_database:
        env["DATABASE_URL"] = instance_database
    server = MakeRun(repo, env, port)
    try:
        server.wait_healthy()
        assert "Log in as 'admin', password: " in server.output  # make run says how to log in

        examples = "\n\n".join(readme_examples())
        env["BASE"] = server.base_url  # as the README says to for a port other than 8000
        # The test's own checks after the README's examples: the turn the README started
        # finished well, and the token the README made has every scope.
        epilogue = f"""
curl -s -H "Authorization: Bearer $TOKEN" {server.base_url}/api/v1/agent/turns/$TURN \\
  | python -c 'import json, sys; turn = json.load(sys.stdin); assert turn["status"] == "succeeded", turn'
python manage.py tokens list | grep -E '^my-agent .*{",".join(sorted(TokenScope.values))}'
"""
        script = (
            f'set -euo pipefail\ncurl() {{ command curl --fail-with-body --show-error "$@"; }}\n{examples}\n{epilogue}'
        )
        result = subprocess.run(
            ["bash", "-x", "-c", script],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, (
            f"README examples failed ({result.returncode}).\n--- output:\n{result.stdout[-6000:]}\n"
            f"--- trace:\n{result.stderr[-6000:]}\n--- make run:\n{server.output}"
        )
    finally:
        server.stop()
