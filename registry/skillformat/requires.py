"""`metadata.requires`: the skills, tools and MCP servers a skill relies on.

The Agent Skills spec has no dependency field yet; `metadata` (a map of text) is its place for
extensions, so a skill declares them as one comma-separated string and stays spec-clean:

    metadata:
      requires: "skill:pdf-tools, skill:forms@production, skill:units@3, tool:Bash, mcp:github"

Entries:
- `skill:NAME` — the skill at the label of the request (the consumer's label, or what it serves);
- `skill:NAME@LABEL` — the skill at that label, whatever the request asked for;
- `skill:NAME@VERSION` — that version number (a whole number: `@3`), a pin;
- `tool:NAME` — a tool the agent must have (`Bash`, `Read`, `Bash(git add:*)`);
- `mcp:SERVER` — an MCP server the agent must be connected to.

Pure Python: the parse is part of reading a SKILL.md (skillmd.py reports its problems as issues
with the entry's line); whether a named skill exists, and cycles, are the registry's to judge.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

REQUIRES_KEY = "requires"
KINDS = ("skill", "tool", "mcp")
MAX_ENTRIES = 100

# The names the registry stores (registry/services/skills.py) and label names
# (registry/services/labels.py): repeated here because the format package imports neither layer.
_SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_LABEL = re.compile(r"[a-z0-9_.-]{1,36}")
_VERSION = re.compile(r"[0-9]{1,9}")
# A tool as agents name them, with an optional argument pattern: `Read`, `Bash(git add:*)`, `mcp__github__x`.
_TOOL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}(\([^()]{0,200}\))?")
_SERVER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_QUOTES = "\"'"


@dataclass(frozen=True)
class Requirement:
    kind: str  # "skill" | "tool" | "mcp"
    name: str
    label: str | None = None  # skill only: `skill:NAME@LABEL`
    version: int | None = None  # skill only: `skill:NAME@3`

    @property
    def pinned(self) -> bool:
        return self.version is not None

    def __str__(self) -> str:
        at = f"@{self.version}" if self.version is not None else f"@{self.label}" if self.label else ""
        return f"{self.kind}:{self.name}{at}"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "label": self.label, "version": self.version}


@dataclass(frozen=True)
class RequiresProblem:
    level: str  # "error" | "warning"
    line: int  # 1-based line in the SKILL.md text
    entry: str  # the entry as written ("" for the field as a whole)
    message: str


def parse_requires(
    text: str, *, line: int = 1, lines: list[str] | None = None
) -> tuple[list[Requirement], list[RequiresProblem]]:
    """The requirements in a `metadata.requires` text, in the order written, without repeats,
    and the problems found: a malformed entry is an error naming it and its line; a repeat is a
    warning. `line` is the `requires:` key's line; with the SKILL.md's `lines`, each entry gets
    the line it is written on (a folded value may span several)."""
    requirements: list[Requirement] = []
    problems: list[RequiresProblem] = []
    entries = _entries(text)
    if len(entries) > MAX_ENTRIES:
        problems.append(
            RequiresProblem(
                "error",
                line,
                "",
                f"`metadata.requires` lists {len(entries):,} entries; at most {MAX_ENTRIES} are read.",
            )
        )
        entries = entries[:MAX_ENTRIES]
    at = line
    for entry in entries:
        at = _entry_line(entry, lines, start=at) if lines is not None else line
        requirement, problem = parse_entry(entry)
        if requirement is None:
            problems.append(RequiresProblem("error", at, entry, f"`metadata.requires`: `{entry[:80]}` {problem}"))
        elif requirement in requirements:
            problems.append(
                RequiresProblem("warning", at, entry, f"`metadata.requires`: `{entry[:80]}` is listed twice.")
            )
        else:
            requirements.append(requirement)
    return requirements, problems


def stored_requirements(frontmatter: object) -> tuple[Requirement, ...]:
    """The requirements of a stored version's frontmatter (its malformed entries were refused at
    publish; one stored before requires was read keeps only its well-formed ones)."""
    metadata = frontmatter.get("metadata") if isinstance(frontmatter, dict) else None
    text = metadata.get(REQUIRES_KEY) if isinstance(metadata, dict) else None
    if text is None:
        return ()
    if not isinstance(text, str):  # a YAML list under metadata: read as the JSON text it is kept as
        text = json.dumps(text)
    return tuple(parse_requires(text)[0])


def parse_entry(entry: str) -> tuple[Requirement | None, str]:
    """One entry, or None and what is wrong with it (a phrase that follows the entry)."""
    kind, colon, rest = entry.partition(":")
    kind = kind.strip().lower()
    rest = rest.strip()
    if not colon or kind not in KINDS:
        return None, "is not `skill:NAME`, `tool:NAME` or `mcp:SERVER`."
    if not rest:
        return None, f"names no {'server' if kind == 'mcp' else kind}."
    if kind == "tool":
        if not _TOOL.fullmatch(rest):
            return None, "is not a tool name (letters, digits, `_`, `-`, `.`, `:`, then an optional `(pattern)`)."
        return Requirement("tool", rest), ""
    if kind == "mcp":
        if not _SERVER.fullmatch(rest):
            return None, "is not an MCP server name (letters, digits, `_`, `-` and `.`)."
        return Requirement("mcp", rest), ""
    name, at, pin = (part.strip() for part in rest.partition("@"))
    if not _SKILL_NAME.fullmatch(name) or ".." in name:
        return None, "is not a skill name (letters, digits, `-`, `_` and `.`, starting with a letter or digit)."
    if not at:
        return Requirement("skill", name), ""
    if _VERSION.fullmatch(pin):
        if int(pin) < 1:
            return None, "pins version 0; versions are numbered from 1."
        return Requirement("skill", name, version=int(pin)), ""
    if not _LABEL.fullmatch(pin):
        return None, "has neither a version number nor a label after `@` (labels are 1-36 of a-z, 0-9, `_`, `.`, `-`)."
    return Requirement("skill", name, label=pin), ""


def requires_line(lines: list[str], metadata_line: int) -> int:
    """The line of `requires:` under the `metadata:` key on `metadata_line` (1-based), or
    `metadata_line` itself (a flow-style map, or a key not found)."""
    pattern = re.compile(r"""^\s+["']?requires["']?\s*:""")
    for index in range(metadata_line, len(lines)):
        row = lines[index]
        if row.strip() and not row[:1].isspace():
            break  # the next top-level key: the metadata block has ended
        if pattern.match(row):
            return index + 1
    return metadata_line


def requirement_lines(raw: str, metadata_line: int | None, requirements: tuple[Requirement, ...]) -> list[int]:
    """The SKILL.md line each requirement is written on (a reading's `raw` text and the line of
    its `metadata` key): where the registry's own checks of an entry point."""
    lines = raw.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    at = requires_line(lines, metadata_line) if metadata_line else 1
    found = []
    for requirement in requirements:
        at = _entry_line(f"{requirement.kind}:{requirement.name}", lines, start=at)
        found.append(at)
    return found


def _entries(text: str) -> list[str]:
    """Comma-separated entries; a YAML list kept as JSON text (`["skill:a", "tool:b"]`) and
    quoted entries are read the way tags are."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    entries = []
    for part in text.split(","):
        entry = " ".join(part.split())
        if len(entry) >= 2 and entry[0] == entry[-1] and entry[0] in _QUOTES:
            entry = entry[1:-1].strip()
        if entry:
            entries.append(entry)
    return entries


def _entry_line(entry: str, lines: list[str], *, start: int) -> int:
    """The first line from `start` (1-based) on which the entry's text begins; `start` when a
    folded value split it."""
    head = entry.split()[0]
    for index in range(start - 1, min(len(lines), start + MAX_ENTRIES)):
        if head in lines[index]:
            return index + 1
    return start
