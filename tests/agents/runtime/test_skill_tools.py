"""Skill tools: read_skill_file, use_skill and the run_skill sandbox (seeds 002, 003, 004)."""

from __future__ import annotations

import ast
import time
import uuid

import pytest

from agents.runtime.sandbox import SandboxLimits
from agents.runtime.skill_tools import skill_tools
from agents.runtime.tools import ToolContext, ToolRegistry, run_tool
from agents.runtime.types import SkillExecution
from tests.agents.runtime.processes import wait_until_gone

ECHO = "import sys\nfor arg in sys.argv[1:]:\n    print(repr(arg))\n"


@pytest.fixture
def context(store, workspace) -> ToolContext:
    return ToolContext(workspace=workspace, store=store)


FAST = SandboxLimits(timeout_seconds=5)


def run(tool_name, arguments, context, limits=FAST):
    tool = ToolRegistry(skill_tools(limits)).get(tool_name)
    assert tool.validation_errors(arguments) == []
    return run_tool(tool, arguments, context)


def test_run_skill_passes_arguments_without_a_shell(store, context, tmp_path):
    store.add("demo", files={"scripts/echo.py": ECHO})
    marker = tmp_path / "pwned"

    result = run(
        "run_skill", {"skill_name": "demo", "script": "echo.py", "args": [f"; touch {marker}", "$(id)", "a b"]}, context
    )

    assert result.ok
    assert f"'; touch {marker}'\n'$(id)'\n'a b'\n" in result.content
    assert not marker.exists()
    assert result.execution == SkillExecution("demo", True)


def test_run_skill_runs_in_a_temp_dir_with_a_copy_of_the_bundle_and_a_scrubbed_env(store, context, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    script = (
        "import os, pathlib\n"
        "print(sorted(os.environ))\n"
        "print(pathlib.Path('references/data.txt').read_text())\n"
        "print(os.getcwd())\n"
    )
    store.add("demo", files={"scripts/env.py": script, "references/data.txt": "bundled data"})

    result = run("run_skill", {"skill_name": "demo", "script": "scripts/env.py"}, context)

    assert result.ok, result.content
    # HOME and TMPDIR point at the working directory; bubblewrap's --chdir sets PWD.
    variables = ast.literal_eval(result.content.split("--- stdout ---\n")[1].splitlines()[0])
    assert {"LANG", "PATH", "HOME", "TMPDIR"} <= set(variables) <= {"LANG", "PATH", "HOME", "TMPDIR", "PWD"}
    assert "sk-secret" not in result.content
    assert "bundled data" in result.content
    assert "skill-run-" in result.content


def test_run_skill_kills_a_script_that_runs_too_long_with_its_children(store, context):
    marker = f"slow-child-{uuid.uuid4().hex}"
    script = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', sys.argv[1]])\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    store.add("demo", files={"scripts/slow.py": script})

    result = run(
        "run_skill",
        {"skill_name": "demo", "script": "slow.py", "args": [marker]},
        context,
        SandboxLimits(timeout_seconds=1),
    )

    assert not result.ok
    assert result.content.startswith("scripts/slow.py timed out and was killed.")
    assert "started" in result.content
    assert result.execution == SkillExecution("demo", False)
    # The child's pid inside a sandbox means nothing here: find it by the marker in its argv.
    assert wait_until_gone(marker), "the script's child process outlived the timeout"


def test_run_skill_caps_the_output(store, context):
    store.add("demo", files={"scripts/loud.py": "print('x' * 1_000_000)\n"})

    result = run("run_skill", {"skill_name": "demo", "script": "loud.py"}, context, SandboxLimits(output_chars=1_000))

    assert result.ok
    stdout = result.content.split("--- stdout ---\n")[1].split("\n--- stderr ---")[0]
    assert stdout == "x" * 1_000
    assert result.content.endswith("(output truncated)")


@pytest.mark.parametrize("script", ["../SKILL.md", "scripts/../../etc/passwd", "/etc/passwd", "notes.md"])
def test_run_skill_rejects_paths_outside_the_scripts_folder(store, context, script):
    store.add("demo", files={"scripts/echo.py": ECHO, "notes.md": "x"})

    result = run("run_skill", {"skill_name": "demo", "script": script}, context)

    assert not result.ok
    assert "invalid path" in result.content or "has no script" in result.content
    assert result.execution is None


def test_run_skill_runs_a_non_python_file_only_if_it_is_executable(store, context):
    store.add(
        "demo",
        files={"scripts/run.sh": '#!/bin/sh\necho shell-ran "$1"\n', "scripts/plain.sh": "#!/bin/sh\necho no\n"},
        executable=("scripts/run.sh",),
    )

    ran = run("run_skill", {"skill_name": "demo", "script": "run.sh", "args": ["ok"]}, context)
    refused = run("run_skill", {"skill_name": "demo", "script": "plain.sh"}, context)

    assert ran.ok and "shell-ran ok" in ran.content
    assert not refused.ok and "not marked executable" in refused.content


def test_use_skill_returns_a_prompt_skills_instructions(store, context):
    store.add("summarize", "1. Read the file.\n2. List key points.", version=2)

    result = run("use_skill", {"skill_name": "summarize"}, context)

    assert result.content == "1. Read the file.\n2. List key points."
    assert result.activation is not None and result.activation.version == 2


def test_use_skill_runs_a_code_skill(store, context):
    store.add("analyze", files={"skill.py": "print('analysis done')\n"})

    result = run("use_skill", {"skill_name": "analyze"}, context)

    assert result.ok and "analysis done" in result.content
    assert result.execution == SkillExecution("analyze", True)


def test_read_skill_file_reads_bundled_files_only(store, context):
    store.add("demo", files={"references/guide.md": "the guide"})

    assert run("read_skill_file", {"skill_name": "demo", "path": "references/guide.md"}, context).content == "the guide"
    escaped = run("read_skill_file", {"skill_name": "demo", "path": "../other/SKILL.md"}, context)
    assert not escaped.ok and "invalid path" in escaped.content
    missing = run("read_skill_file", {"skill_name": "demo", "path": "nope.md"}, context)
    assert not missing.ok and "references/guide.md" in missing.content


def test_run_skill_stops_at_the_turns_deadline_when_that_comes_before_its_own_limit(store, context):
    store.add("sleepy", files={"scripts/nap.py": "import time\ntime.sleep(20)\n"})
    context.deadline = time.monotonic() + 1

    started = time.monotonic()
    result = run(
        "run_skill", {"skill_name": "sleepy", "script": "nap.py"}, context, limits=SandboxLimits(timeout_seconds=20)
    )

    assert not result.ok and "timed out" in result.content
    assert time.monotonic() - started < 10
