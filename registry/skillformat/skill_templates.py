"""Starting points for a new skill (seed 002: prompt skills and code skills), shared by the
console's "New skill" page and `manage.py skills create`."""

from __future__ import annotations

from dataclasses import dataclass

from registry.skillformat.skillmd import render_skill_md

PROMPT, CODE, SCRIPT = "prompt", "code", "script"
KINDS = {
    PROMPT: "Prompt skill",
    CODE: "Code skill",
    SCRIPT: "Skill with a script",
}


@dataclass(frozen=True)
class SkillTemplate:
    skill_md: str
    files: tuple[tuple[str, bytes, bool], ...]  # (path, content, executable)


def skill_template(kind: str, *, name: str, description: str | None = None) -> SkillTemplate:
    """A valid SKILL.md (and its files) for `kind`; unknown kinds give the prompt skill."""
    title = name.replace("-", " ").replace("_", " ").capitalize()
    frontmatter: dict = {
        "name": name,
        "description": description or f"Describe what {name} does and when to use it (one or two sentences).",
        # Only Agent Skills fields: the registry's own live under `metadata` (text values), so a new
        # skill passes the reference validator with no portability warning.
        "metadata": {"version": "0.1.0", "triggers": "task_match explicit_command"},
    }
    files: tuple[tuple[str, bytes, bool], ...] = ()
    if kind == CODE:
        frontmatter["allowed-tools"] = "run_skill"
        body = _CODE_BODY.format(title=title, name=name)
        files = (("scripts/skill.py", _CODE_SCRIPT.format(name=name).encode(), True),)
    elif kind == SCRIPT:
        frontmatter["allowed-tools"] = "run_skill"
        body = _SCRIPT_BODY.format(title=title, name=name)
        files = (("scripts/check.sh", _SHELL_SCRIPT.encode(), True),)
    else:
        body = _PROMPT_BODY.format(title=title)
    return SkillTemplate(skill_md=_with_tags_hint(render_skill_md(frontmatter, body)), files=files)


# Tags have no good default (a placeholder would be matched on if left in), so the template
# shows where they go as a comment under `metadata`, in the form the registry reads.
TAGS_HINT = "  # tags: csv, data   (comma-separated words requests find this skill by)"


def _with_tags_hint(skill_md: str) -> str:
    lines = skill_md.split("\n")
    metadata = lines.index("metadata:")
    end = metadata + 1
    while lines[end].startswith("  "):
        end += 1
    return "\n".join([*lines[:end], TAGS_HINT, *lines[end:]])


_PROMPT_BODY = """# {title}

## When to use

- Describe the requests this skill is for.

## Steps

1. First step.
2. Second step.

## Output

Say what a good answer looks like.
"""

_CODE_BODY = """# {title}

A code skill: the steps are done by `scripts/skill.py`.

## When to use

- Describe the requests this skill is for.

## How to run

Call `run_skill(skill_name="{name}", script="scripts/skill.py", args=[...])` and report its output.
"""

_SCRIPT_BODY = """# {title}

## When to use

- Describe the requests this skill is for.

## Steps

1. Gather what the script needs from the request.
2. Run the helper: `run_skill(skill_name="{name}", script="scripts/check.sh", args=[...])`.
3. Explain the script's output to the user; on a non-zero exit, show its message.
"""

_CODE_SCRIPT = """#!/usr/bin/env python3
\"\"\"{name}: the code part of the skill (seed 002 CodeSkill), run with `run_skill`.

Arguments arrive as command-line arguments; print the result for the agent to read.
Exit non-zero with a message on stderr when something goes wrong.
\"\"\"

import sys


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: skill.py ARG...", file=sys.stderr)
        return 2
    print(" ".join(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
"""

_SHELL_SCRIPT = """#!/bin/sh
# A helper the skill runs with run_skill: arguments in, a result on stdout.
set -eu
if [ "$#" -eq 0 ]; then
  echo "usage: check.sh ARG..." >&2
  exit 2
fi
printf '%s\\n' "$@"
"""
