"""Settings are read and checked at start-up, and importing them writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def start(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess:
    """Import the production settings in a fresh process, VAR_DIR pointing at an empty folder."""
    env = {key: value for key, value in os.environ.items() if key not in ("TESTING", "DEBUG", "SECRET_KEY")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path / "var"), **variables)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_importing_settings_writes_nothing(tmp_path):
    started = start(tmp_path)
    assert started.returncode == 0, started.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_public_host_without_a_secret_key_stops_the_start_up(tmp_path):
    started = start(tmp_path, ALLOWED_HOSTS="skills.example.com,localhost")
    assert started.returncode != 0
    assert "ALLOWED_HOSTS names skills.example.com but SECRET_KEY is not set" in started.stderr


def test_a_public_host_with_a_secret_key_starts(tmp_path):
    started = start(tmp_path, ALLOWED_HOSTS="skills.example.com", SECRET_KEY="a-long-random-value")
    assert started.returncode == 0, started.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("API_THROTTLE_RATE", "often"),
        ("RULE_QUERY_MAX_CHARS", "0"),
        ("AGENT_MAX_ITERATIONS", "-1"),
        ("RUN_SKILL_MEMORY_BYTES", "0"),
        ("DISCOVERY_LABEL", "Production!"),
        ("WEBHOOK_TIMEOUT_SECONDS", "0"),
        ("EVAL_MAX_ACTIVE_RUNS_PER_USER", "0"),
        ("EVAL_MAX_QUEUED_TURNS", "-5"),
        ("WEBHOOK_CONCURRENCY", "0"),
    ],
)
def test_an_invalid_setting_stops_the_start_up_naming_it(tmp_path, variable, value):
    started = start(tmp_path, **{variable: value})
    assert started.returncode != 0
    assert f"ImproperlyConfigured: {variable}=" in started.stderr


@pytest.mark.parametrize("judge", ["scripted", "http://127.0.0.1:9/judge"])
def test_a_judge_model_a_turn_could_not_use_stops_the_start_up(tmp_path, judge):
    """Without DEBUG or TESTING, scripted is not allowed: a scripted judge would grade as the
    suite's own script says."""
    started = start(tmp_path, EVAL_JUDGE_MODEL=judge)
    assert started.returncode != 0
    assert "ImproperlyConfigured: EVAL_JUDGE_MODEL" in started.stderr


def test_local_state_makes_the_folders_and_a_private_secret_once(tmp_path):
    env = {**os.environ, "VAR_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    secret_file = tmp_path / "var" / "secret_key"
    secret = secret_file.read_text()
    assert len(secret) >= 50 and secret_file.stat().st_mode & 0o077 == 0
    assert (tmp_path / "var" / "broker" / "out").is_dir()
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    assert secret_file.read_text() == secret


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_var_and_its_secrets_are_private_from_the_first_byte_even_with_an_open_umask(tmp_path):
    """`make run`'s steps with umask 000: var/ is 0700 and the database, the secret key and the
    generated admin password are 0600, because each is created so, not chmod'ed once written."""
    var = tmp_path / "var"
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "TESTING")}
    env.update(VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="config.settings", DJANGO_SUPERUSER_PASSWORD="")

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, umask=0, check=True
        )

    run("config/local_state.py")
    assert _mode(var) == 0o700
    assert _mode(var / "secret_key") == 0o600 and _mode(var / "db.sqlite3") == 0o600
    run("manage.py", "migrate", "--noinput", "--verbosity", "0")
    run("manage.py", "ensure_admin")
    assert _mode(var / "db.sqlite3") == 0o600 and _mode(var / "admin-password.txt") == 0o600
    assert sorted(p.name for p in var.iterdir() if p.is_file() and _mode(p) & 0o077) == []
    assert "registry.W00" not in run("manage.py", "check").stderr


def test_start_up_warns_when_var_or_a_secret_is_readable_by_others_and_make_run_tightens_it(tmp_path):
    var = tmp_path / "var"
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "TESTING")}
    env.update(VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="config.settings")
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    var.chmod(0o755)
    (var / "db.sqlite3").chmod(0o644)
    (var / "secret_key").chmod(0o640)

    checked = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert f"{var} is mode 755" in checked.stderr and "(registry.W001)" in checked.stderr
    assert f"{var / 'db.sqlite3'} is mode 644" in checked.stderr
    assert f"{var / 'secret_key'} is mode 640" in checked.stderr

    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    assert (_mode(var), _mode(var / "db.sqlite3"), _mode(var / "secret_key")) == (0o700, 0o600, 0o600)
