"""What a skill version can do, read from its files without running any of them.

A capability manifest lists, each with the file and line it came from: the network
destinations its scripts and instructions name, the commands it runs, the packages it
installs, the environment variables and credentials it reads, the paths it writes outside its
own folder, the MCP servers it refers to and its `allowed-tools`. Python is read with `ast`
(calls, string constants, `os.environ`); shell scripts, JS/TS and Markdown (its fenced code
blocks by language, its inline code and prose) line by line with RE2 patterns, whose time is
linear in the text, so a hostile file costs at most its size. Nothing here imports Django or
executes what it reads; bundles are bounded in bytes, entries and time, and anything unreadable
is skipped with a note instead of failing.

`capabilities_diff` says what a version adds and removes compared with another: what a label
policy's `new_capabilities` gate and the confirm page show.
"""

from __future__ import annotations

from registry.skillformat.capabilities.diff import CapabilityChange, CapabilityDiff, capabilities_diff
from registry.skillformat.capabilities.model import (
    ANALYZER_VERSION,
    COMMAND,
    CREDENTIAL,
    ENTRIES_MAX,
    ENV,
    EXCERPT_MAX,
    FILE_MAX_BYTES,
    GATED_KINDS,
    KIND_TITLES,
    KINDS,
    LINE_MAX_CHARS,
    MCP,
    NETWORK,
    PACKAGE,
    PLACES_PER_FILE,
    TIME_BUDGET_SECONDS,
    TOOL,
    TOTAL_MAX_BYTES,
    WRITE,
    Capability,
    Manifest,
)
from registry.skillformat.capabilities.reading import bundle_capabilities, files_capabilities

__all__ = [
    "ANALYZER_VERSION",
    "COMMAND",
    "CREDENTIAL",
    "ENTRIES_MAX",
    "ENV",
    "EXCERPT_MAX",
    "FILE_MAX_BYTES",
    "GATED_KINDS",
    "KINDS",
    "KIND_TITLES",
    "LINE_MAX_CHARS",
    "MCP",
    "NETWORK",
    "PACKAGE",
    "PLACES_PER_FILE",
    "TIME_BUDGET_SECONDS",
    "TOOL",
    "TOTAL_MAX_BYTES",
    "WRITE",
    "Capability",
    "CapabilityChange",
    "CapabilityDiff",
    "Manifest",
    "bundle_capabilities",
    "capabilities_diff",
    "files_capabilities",
]
