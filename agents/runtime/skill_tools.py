"""Tools that reach skills: lazy loading (seed 003), use_skill (seed 002), run_skill (seed 004)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.runtime.sandbox import (
    DEFAULT_LIMITS,
    BundleFile,
    Isolation,
    SandboxError,
    SandboxLimits,
    run_script,
    safe_relative_path,
)
from agents.runtime.tools import Tool, ToolContext, ToolFailure, ToolResult
from agents.runtime.types import RequiredSkill, SkillActivation, SkillDocument, SkillExecution, SkillStore

# Tools that load a skill's instructions. seed 000, fix 1: a forced skill must not load another,
# so these are removed from the offered tools (the seed's `skill_loader`). read_skill_file reads
# a bundled file and stays available when the skill declares it.
SKILL_LOADERS = frozenset({"read_skill", "use_skill"})
CODE_SKILL_ENTRY = "skill.py"  # seed 002: SKILL.md + skill.py makes a code skill
MAX_SKILL_FILE_BYTES = 100_000
FILES_HEADING = "## Files in this skill"  # read_skill appends the file list under it
REQUIRED_HEADING = "## Skills this skill requires"  # and the skills it requires under this

SKILL_NAME_PROPERTY = {
    "type": "string",
    "description": "The skill's name as listed in <available_skills>.",
    "minLength": 1,
}


def _load(store: SkillStore, name: str) -> SkillDocument:
    document = store.load(name)
    if document is None:
        raise ToolFailure(f"no enabled skill named {name!r}; use a name from <available_skills>")
    return document


def required_skills(context: ToolContext, name: str) -> tuple[RequiredSkill, ...]:
    """The skills `name` requires that this turn has not been given yet (marked given now)."""
    context.loaded.add(name)
    found = tuple(item for item in context.store.required(name) if item.document.name not in context.loaded)
    context.loaded.update(item.document.name for item in found)
    return found


def required_section(required: tuple[RequiredSkill, ...]) -> str:
    """The bodies of the required skills, after the body of the skill that needs them."""
    if not required:
        return ""
    blocks = [
        f"### Skill: {item.document.name} (version {item.document.version}, {item.why})\n\n{item.document.body.strip()}"
        for item in required
    ]
    return f"\n\n{REQUIRED_HEADING}\nThis skill relies on these; follow them where it says so.\n\n" + "\n\n".join(
        blocks
    )


def _read_skill(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    document = _load(context.store, arguments["skill_name"])
    required = required_skills(context, document.name)
    files = "\n".join(f"- {path}" for path in document.files) or "(none)"
    content = (
        f"# Skill: {document.name} (version {document.version})\n\n{document.body.strip()}\n\n"
        f"{FILES_HEADING}\n{files}\n\n"
        "Read a file with read_skill_file; run a script from scripts/ with run_skill."
        f"{required_section(required)}"
    )
    return ToolResult(
        ok=True,
        content=content,
        activation=SkillActivation(document.name, document.version, "read_skill", document.source),
        required=required,
    )


def _read_skill_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    document = _load(context.store, arguments["skill_name"])
    path = _bundle_path(arguments["path"])
    data = context.store.read_file(document.name, path)
    if data is None:
        raise ToolFailure(
            f"skill {document.name!r} has no file {path!r}; its files are: {', '.join(document.files) or 'none'}"
        )
    if b"\x00" in data[:8192]:
        return ToolResult(ok=True, content=f"{path} is a binary file ({len(data)} bytes).")
    text = data[:MAX_SKILL_FILE_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_SKILL_FILE_BYTES:
        text += f"\n[... truncated: showing {MAX_SKILL_FILE_BYTES} of {len(data)} bytes ...]"
    return ToolResult(ok=True, content=text)


def _bundle_path(path: str) -> str:
    try:
        return safe_relative_path(path).as_posix()
    except SandboxError as error:
        raise ToolFailure(str(error)) from error


def _bundle(store: SkillStore, document: SkillDocument) -> list[BundleFile]:
    files = []
    for path in document.files:
        content = store.read_file(document.name, path)
        if content is not None:
            files.append(BundleFile(path, content, store.file_is_executable(document.name, path)))
    return files


def _execute(
    context: ToolContext,
    document: SkillDocument,
    entry: str,
    args: list[str],
    limits: SandboxLimits,
    isolation: Isolation,
) -> ToolResult:
    seconds_left = context.seconds_left()
    if seconds_left is not None and seconds_left < limits.timeout_seconds:
        # The turn's time budget is nearly spent: the script gets what is left, not its full limit.
        limits = replace(limits, timeout_seconds=max(seconds_left, 0.1))
    try:
        run = run_script(_bundle(context.store, document), entry, args, limits=limits, isolation=isolation)
    except SandboxError as error:
        raise ToolFailure(str(error)) from error
    status = "timed out and was killed" if run.timed_out else f"exited with code {run.exit_code}"
    note = "\n(output truncated)" if run.truncated else ""
    if run.out_of_memory:
        note += f"\n(a process was killed: the run reached its memory limit of {limits.run_memory_bytes // 2**20} MiB)"
    content = f"{entry} {status}.\n--- stdout ---\n{run.stdout}\n--- stderr ---\n{run.stderr}{note}"
    return ToolResult(ok=run.ok, content=content, execution=SkillExecution(document.name, run.ok))


def _script_entry(document: SkillDocument, script: str) -> str:
    path = _bundle_path(script)
    entry = path if path.startswith("scripts/") else f"scripts/{path}"
    if entry not in document.files:
        scripts = [f for f in document.files if f.startswith("scripts/")]
        raise ToolFailure(
            f"skill {document.name!r} has no script {entry!r}; its scripts are: {', '.join(scripts) or 'none'}"
        )
    return entry


def use_skill_tool(limits: SandboxLimits = DEFAULT_LIMITS, isolation: Isolation = Isolation.BWRAP) -> Tool:
    def use_skill(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        document = _load(context.store, arguments["skill_name"])
        if CODE_SKILL_ENTRY in document.files:
            return _execute(context, document, CODE_SKILL_ENTRY, [], limits, isolation)
        # A prompt skill: its instructions are the result, and the model follows them. Analytics
        # count it as a load on the model's initiative, like read_skill.
        activation = SkillActivation(document.name, document.version, "read_skill", document.source)
        required = required_skills(context, document.name)
        content = document.body.strip() + required_section(required)
        return ToolResult(ok=True, content=content, activation=activation, required=required)

    return Tool(
        "use_skill",
        "Use a skill: returns a prompt skill's instructions to follow, or runs a code skill and returns its result.",
        {
            "type": "object",
            "properties": {"skill_name": SKILL_NAME_PROPERTY},
            "required": ["skill_name"],
            "additionalProperties": False,
        },
        use_skill,
    )


def run_skill_tool(limits: SandboxLimits = DEFAULT_LIMITS, isolation: Isolation = Isolation.BWRAP) -> Tool:
    def run_skill(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        document = _load(context.store, arguments["skill_name"])
        entry = _script_entry(document, arguments["script"])
        return _execute(context, document, entry, arguments.get("args", []), limits, isolation)

    return Tool(
        "run_skill",
        f"Run a script from a skill's scripts/ folder with an argument list "
        f"(no shell; {limits.timeout_seconds:g} s limit).",
        {
            "type": "object",
            "properties": {
                "skill_name": SKILL_NAME_PROPERTY,
                "script": {
                    "type": "string",
                    "description": "The script's file name in scripts/, e.g. 'generate.py'.",
                    "minLength": 1,
                },
                "args": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 10_000},
                    "maxItems": 100,
                    "description": "Command-line arguments, one string each.",
                },
            },
            "required": ["skill_name", "script"],
            "additionalProperties": False,
        },
        run_skill,
    )


def skill_tools(limits: SandboxLimits = DEFAULT_LIMITS, isolation: Isolation = Isolation.BWRAP) -> list[Tool]:
    """The skill tools; scripts run with `isolation` (the RUN_SKILL_SANDBOX setting, see sandbox.py)."""
    return [
        Tool(
            "read_skill",
            "Read a skill's full SKILL.md instructions and the list of its files. "
            "Call it after choosing a skill from <available_skills>.",
            {
                "type": "object",
                "properties": {"skill_name": SKILL_NAME_PROPERTY},
                "required": ["skill_name"],
                "additionalProperties": False,
            },
            _read_skill,
        ),
        Tool(
            "read_skill_file",
            "Read one file bundled with a skill (e.g. references/guide.md).",
            {
                "type": "object",
                "properties": {
                    "skill_name": SKILL_NAME_PROPERTY,
                    "path": {
                        "type": "string",
                        "description": "The file's path inside the skill, e.g. 'references/guide.md'.",
                        "minLength": 1,
                    },
                },
                "required": ["skill_name", "path"],
                "additionalProperties": False,
            },
            _read_skill_file,
        ),
        use_skill_tool(limits, isolation),
        run_skill_tool(limits, isolation),
    ]
