"""Which reader reads each file, within the byte budget; the entry point for a bundle."""

from __future__ import annotations

from collections.abc import Iterable

from registry.skillformat.bundle import SKILL_MD, Bundle
from registry.skillformat.capabilities.configs import read_json, read_requirements
from registry.skillformat.capabilities.javascript import read_js
from registry.skillformat.capabilities.markdown import read_markdown
from registry.skillformat.capabilities.model import FILE_MAX_BYTES, KINDS, MCP, TOOL, TOTAL_MAX_BYTES, Budget, Manifest
from registry.skillformat.capabilities.patterns import EXTENSIONS, MCP_TOOL, SHEBANG
from registry.skillformat.capabilities.python import read_python
from registry.skillformat.capabilities.shell import read_shell
from registry.skillformat.skillmd import parse_skill_md


def bundle_capabilities(bundle: Bundle) -> Manifest:
    """The capability manifest of a bundle (SKILL.md and every regular file, links skipped:
    their target is read under its own path)."""
    files = [(SKILL_MD, bundle.skill_md)] + [(f.path, f.content) for f in bundle.files if f.link is None]
    return files_capabilities(files)


def files_capabilities(files: Iterable[tuple[str, bytes]]) -> Manifest:
    budget = Budget()
    skipped: list[tuple[str, str]] = []
    total = 0
    for path, content in files:
        if budget.spent:
            skipped.append((path, "not read: the analysis budget ran out"))
            continue
        if len(content) > FILE_MAX_BYTES:
            skipped.append((path, f"larger than {FILE_MAX_BYTES // 1024} KiB"))
            continue
        total += len(content)
        if total > TOTAL_MAX_BYTES:
            skipped.append((path, f"the bundle's first {TOTAL_MAX_BYTES // (1024 * 1024)} MiB were read"))
            budget.truncated = True
            continue
        kind = _file_kind(path, content)
        if kind is None:
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append((path, "not UTF-8 text"))
            continue
        if "\x00" in text:
            skipped.append((path, "binary"))
            continue
        if path == SKILL_MD:
            _allowed_tools(content, budget)
        try:
            READERS[kind](text, path, 1, budget)
        except Exception as error:  # noqa: BLE001
            # A defect of this analysis, not of the skill, must not refuse a publish: the
            # entries so far stand, the rest of the file is named as not read, and the other
            # files are still read.
            skipped.append((path, f"not read to the end: {type(error).__name__}"))
    entries = sorted(budget.entries.values(), key=lambda e: (KINDS.index(e.kind), e.value, e.file, e.line))
    return Manifest(entries=tuple(entries), skipped=tuple(skipped), truncated=budget.truncated)


def _file_kind(path: str, content: bytes) -> str | None:
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if name.startswith("requirements") and name.endswith((".txt", ".in")):
        return "requirements"
    if dot > 0 and name[dot:].lower() in EXTENSIONS:
        return EXTENSIONS[name[dot:].lower()]
    if content.startswith(b"#!"):
        first = content[:200].split(b"\n", 1)[0].decode("utf-8", "replace")
        found = SHEBANG.search(first)
        program = found.group(1).lower() if found else ""
        if program.startswith("python"):
            return "python"
        if program in ("node", "deno", "bun", "tsx", "ts"):
            return "js"
        return "shell"
    if dot < 0 and name in ("Makefile", "Dockerfile", "Justfile"):
        return "shell"
    return None


def _allowed_tools(content: bytes, budget: Budget) -> None:
    try:
        parsed = parse_skill_md(content)
    except Exception:  # noqa: BLE001 - a SKILL.md that does not parse has no tools to list
        return
    line = parsed.field_lines.get("allowed-tools") or parsed.field_lines.get("allowed_tools") or 1
    for tool in parsed.allowed_tools:
        budget.add(TOOL, tool, SKILL_MD, line, f"allowed-tools: {tool}")
        for server in MCP_TOOL.finditer(tool):
            budget.add(MCP, server.group(1), SKILL_MD, line, tool)


READERS = {
    "requirements": read_requirements,
    "python": read_python,
    "shell": read_shell,
    "js": read_js,
    "markdown": read_markdown,
    "json": read_json,
}
