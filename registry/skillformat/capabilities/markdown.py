"""Markdown (SKILL.md and references): prose, inline code, and code blocks read by their language."""

from __future__ import annotations

from registry.skillformat.capabilities.configs import read_json
from registry.skillformat.capabilities.javascript import read_js
from registry.skillformat.capabilities.model import Budget
from registry.skillformat.capabilities.patterns import CODE_LANGUAGES, FENCE, INLINE_CODE, INSTALLERS
from registry.skillformat.capabilities.python import read_python
from registry.skillformat.capabilities.shell import read_shell, shell_line
from registry.skillformat.capabilities.text import numbered_lines, secrets_in, urls_in


def read_markdown(text: str, path: str, first_line: int, budget: Budget) -> None:
    block: list[str] | None = None
    block_language, block_start, fence = "", 0, ""
    for number, line in numbered_lines(text, first_line):
        if budget.spent:
            return
        opened = FENCE.search(line)
        if block is not None:
            if opened and opened.group(1).startswith(fence) and not opened.group(2):
                _read_block(block_language, "\n".join(block), path, block_start + 1, budget)
                block = None
            else:
                block.append(line)
            continue
        if opened:
            block, block_language, block_start, fence = [], opened.group(2).lower(), number, opened.group(1)
            continue
        urls_in(line, path, number, budget)
        secrets_in(line, path, number, budget)
        for code in INLINE_CODE.finditer(line):
            span = code.group(1)
            word = span.split(maxsplit=1)[0] if span.split() else ""
            if word in INSTALLERS or word in ("curl", "wget", "bash", "sh", "ssh", "scp", "git") or word == "$":
                shell_line(span, path, number, budget)
    if block is not None:  # an unclosed fence runs to the end of the file
        _read_block(block_language, "\n".join(block), path, block_start + 1, budget)


def _read_block(language: str, text: str, path: str, first_line: int, budget: Budget) -> None:
    kind = CODE_LANGUAGES.get(language)
    if kind is None:
        # Unmarked or other blocks (text, yaml, …): name what they point at, run nothing.
        for number, line in numbered_lines(text, first_line):
            urls_in(line, path, number, budget)
            secrets_in(line, path, number, budget)
        return
    _BLOCK_READERS[kind](text, path, first_line, budget)


# A code block's language (CODE_LANGUAGES) -> its reader.
_BLOCK_READERS = {"python": read_python, "shell": read_shell, "js": read_js, "json": read_json}
