"""A fresh `make run` with `DISCOVERY_LABEL=production`: its discovery index lists every bundled
skill with no step after it (its `skills sync` puts `production` on them), and the npm `skills`
CLI lists them from it, as docs/consumers/discovery.md says.

It starts `make run` in a copy of the repository, as tests/test_readme.py does (whose helpers it
uses), because the claim is about that command: its sync, then its server."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pytest

from registry.skillformat.bundle import find_skill_folders
from tests.registry.api.test_discovery_cli import NODE, SKILLS_CLI
from tests.test_readme import (
    NOT_INHERITED,
    ROOT,
    MakeRun,
    copy_tracked_files,
    free_port,
    instance_database,  # noqa: F401  (a fixture this module uses)
)


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_a_fresh_make_run_with_discovery_label_lists_the_bundled_skills(tmp_path, instance_database):  # noqa: F811
    repo = tmp_path / "repo"
    copy_tracked_files(repo)
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    env["DISCOVERY_LABEL"] = "production"
    if instance_database:
        env["DATABASE_URL"] = instance_database
    server = MakeRun(repo, env, free_port())
    try:
        server.wait_healthy()
        with urllib.request.urlopen(f"{server.base_url}/.well-known/agent-skills/index.json", timeout=30) as answer:
            index = json.load(answer)
        bundled = sorted(folder.name for folder in find_skill_folders(ROOT / "skills"))
        assert len(bundled) >= 8
        assert sorted(entry["name"] for entry in index["skills"]) == bundled, server.output
        assert "labelled code-review v1 production" in server.output  # the sync said what it did

        if NODE.exists() and SKILLS_CLI.exists():  # .ci/node-tools installs them (CI does)
            listed = subprocess.run(
                [str(NODE), str(SKILLS_CLI), "add", server.base_url, "--list"],
                cwd=tmp_path,
                env={"PATH": f"{NODE.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "DO_NOT_TRACK": "1", "CI": "1"},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert listed.returncode == 0, listed.stderr
            assert [name for name in bundled if name not in listed.stdout] == []
    finally:
        server.stop()
