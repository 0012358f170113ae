"""The manifest's shape: capability kinds, one entry (kind, value, file, line), the manifest, and the
budget every reader adds entries through (bytes, entries, time)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

# Bumped whenever what the analysis finds changes: stored manifests of an older analyzer are
# computed again when read.
ANALYZER_VERSION = 1

NETWORK, COMMAND, PACKAGE, ENV, CREDENTIAL, WRITE, MCP, TOOL = (
    "network",
    "command",
    "package",
    "env",
    "credential",
    "write",
    "mcp",
    "tool",
)
KINDS = (NETWORK, COMMAND, PACKAGE, ENV, CREDENTIAL, WRITE, MCP, TOOL)
# What a label policy's `new_capabilities` gate asks an admin about: reaching out, running
# things, reading secrets.
GATED_KINDS = frozenset({NETWORK, COMMAND, CREDENTIAL})
KIND_TITLES = {
    NETWORK: "network",
    COMMAND: "runs",
    PACKAGE: "installs",
    ENV: "reads env",
    CREDENTIAL: "reads",
    WRITE: "writes",
    MCP: "MCP server",
    TOOL: "allowed tool",
}

FILE_MAX_BYTES = 512 * 1024  # a larger file is skipped (noted), not read
TOTAL_MAX_BYTES = 8 * 1024 * 1024
LINE_MAX_CHARS = 4000  # longer lines are read up to here
ENTRIES_MAX = 2000
PLACES_PER_FILE = 5
VALUE_MAX = 200
EXCERPT_MAX = 160
TIME_BUDGET_SECONDS = 10.0  # the corpus's largest bundle (740 KB) takes about 1.4 s


@dataclass(frozen=True)
class Capability:
    kind: str
    value: str
    file: str
    line: int
    excerpt: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.value)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "file": self.file, "line": self.line, "excerpt": self.excerpt}


@dataclass(frozen=True)
class Manifest:
    entries: tuple[Capability, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (file, why) for files not read
    truncated: bool = False  # the entry or time budget ran out: more may be there
    analyzer: int = ANALYZER_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {
            "analyzer": self.analyzer,
            "entries": [entry.as_dict() for entry in self.entries],
            "skipped": [{"file": path, "reason": why} for path, why in self.skipped],
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, stored: dict[str, Any]) -> Manifest:
        return cls(
            entries=tuple(
                Capability(e["kind"], e["value"], e["file"], e["line"], e.get("excerpt", "")) for e in stored["entries"]
            ),
            skipped=tuple((s["file"], s["reason"]) for s in stored.get("skipped", [])),
            truncated=bool(stored.get("truncated")),
            analyzer=int(stored.get("analyzer", 0)),
        )

    def counts(self) -> dict[str, int]:
        """Distinct values per kind."""
        return {kind: len({e.value for e in self.entries if e.kind == kind}) for kind in KINDS}


class Budget:
    """The entries one analysis has found, and what it may still spend: ENTRIES_MAX entries,
    PLACES_PER_FILE lines per value and file, TIME_BUDGET_SECONDS. Readers check `spent`
    between lines and nodes; once spent, the manifest says `truncated`."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + TIME_BUDGET_SECONDS
        self.entries: dict[tuple[str, str, str, int], Capability] = {}
        self.places: dict[tuple[str, str, str], int] = {}  # lines kept per (kind, value, file)
        self.truncated = False

    @property
    def spent(self) -> bool:
        if len(self.entries) >= ENTRIES_MAX or time.monotonic() > self.deadline:
            self.truncated = True
        return self.truncated

    def add(self, kind: str, value: str, path: str, line: int, excerpt: str = "") -> None:
        value = " ".join(value.split())[:VALUE_MAX]
        if not value or self.truncated:
            return
        key = (kind, value, path, line)
        if key in self.entries:
            return
        # `grep` on fifty lines of one script is one capability: its first few lines say where.
        seen = self.places.get((kind, value, path), 0)
        if seen >= PLACES_PER_FILE:
            return
        self.places[(kind, value, path)] = seen + 1
        self.entries[key] = Capability(kind, value, path, line, " ".join(excerpt.split())[:EXCERPT_MAX])
