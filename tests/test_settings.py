"""Settings are read and checked at start-up, and importing them writes nothing (issue 9)."""

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
    ],
)
def test_an_invalid_setting_stops_the_start_up_naming_it(tmp_path, variable, value):
    started = start(tmp_path, **{variable: value})
    assert started.returncode != 0
    assert f"ImproperlyConfigured: {variable}=" in started.stderr


def test_local_state_makes_the_folders_and_a_private_secret_once(tmp_path):
    env = {**os.environ, "VAR_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    secret_file = tmp_path / "var" / "secret_key"
    secret = secret_file.read_text()
    assert len(secret) >= 50 and secret_file.stat().st_mode & 0o077 == 0
    assert (tmp_path / "var" / "broker" / "out").is_dir()
    subprocess.run([sys.executable, "config/local_state.py"], cwd=ROOT, env=env, check=True)
    assert secret_file.read_text() == secret
