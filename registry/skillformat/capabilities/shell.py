"""Shell lines (scripts, Markdown code blocks, inline code, commands in other languages' strings):
the programs run, packages installed, files written."""

from __future__ import annotations

from registry.skillformat.capabilities.model import COMMAND, CREDENTIAL, PACKAGE, Budget
from registry.skillformat.capabilities.patterns import (
    CASE_LABEL,
    COPY_TARGET,
    DOWNLOAD_TARGET,
    FUNCTION,
    HEREDOC,
    INSTALLERS,
    PLACEHOLDER,
    PROGRAM,
    REDIRECT,
    SHELL_VAR,
    SHELL_WORDS,
    TEE,
)
from registry.skillformat.capabilities.text import is_secret_name, numbered_lines, secrets_in, urls_in, write_found


def read_shell(text: str, path: str, first_line: int, budget: Budget) -> None:
    functions = frozenset(match.group(1) for match in FUNCTION.finditer(text))
    heredoc, quote = None, ""
    for number, line in numbered_lines(text, first_line):
        if budget.spent:
            return
        if quote:
            # Inside a string opened on an earlier line (a jq or awk program, a message): data.
            quote = _quote_after(line, quote)
            urls_in(line, path, number, budget)
            secrets_in(line, path, number, budget)
            continue
        if heredoc is not None:
            # A here-document is data (or another language's source): name what it points at.
            if line.strip() == heredoc:
                heredoc = None
            else:
                urls_in(line, path, number, budget)
                secrets_in(line, path, number, budget)
            continue
        shell_line(line, path, number, budget, functions)
        quote = _quote_after(line, "")
        opened = HEREDOC.search(line)
        if opened:
            heredoc = opened.group(1)


def shell_line(line: str, path: str, number: int, budget: Budget, functions: frozenset[str] = frozenset()) -> None:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return
    urls_in(line, path, number, budget)
    secrets_in(line, path, number, budget)
    for match in SHELL_VAR.finditer(line):
        name = match.group(1)
        if is_secret_name(name):
            budget.add(CREDENTIAL, name, path, number, line)
    # A `>` in a sed expression, a message or a `<placeholder>` is no redirection.
    bare = PLACEHOLDER.sub(lambda match: " " * len(match.group(0)), _unquoted(line))
    for pattern in (REDIRECT, TEE, COPY_TARGET, DOWNLOAD_TARGET):
        for match in pattern.finditer(bare):
            write_found(match.group(1), path, number, line, budget)
    case_label = CASE_LABEL.search(stripped)
    if case_label:  # `cpu|CPU) profile=...`: a case's patterns, then its command
        stripped = stripped[case_label.end() :]
    for segment in _split_segments(stripped):
        found = PROGRAM.search(segment)
        if not found:
            continue
        program = found.group(1).rsplit("/", 1)[-1]
        follows = segment[found.end() : found.end() + 1]
        if (
            program.lower() in SHELL_WORDS
            or program in functions
            or not program[:1].isalpha()
            or program.endswith(":")
            or follows in ("=", "(", "[", "+")  # an assignment or a function definition
        ):
            continue
        budget.add(COMMAND, program, path, number, line)
        _installed(program, segment[found.end() :], path, number, line, budget)


def _unquoted(line: str) -> str:
    """`line` with what is inside single or double quotes blanked (same length)."""
    out, quote = [], ""
    for char in line:
        if quote:
            if char == quote:
                quote = ""
                out.append(char)
            else:
                out.append(" ")
        else:
            if char in "'\"":
                quote = char
            out.append(char)
    return "".join(out)


def _quote_after(line: str, quote: str) -> str:
    """The quote (`'`, `"` or none) still open at the end of `line`, starting inside `quote`;
    a `#` comment outside quotes ends the scan (its apostrophes open nothing)."""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char == "\\":
            index += 1
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            break
        index += 1
    return quote


def _split_segments(line: str) -> list[str]:
    """The commands of a shell line: split at `|`, `;`, `&`, `&&`, `||` and `$(` outside quotes
    (a jq or awk program's `|` is not a pipe), and at `$(` inside double quotes."""
    parts, current, quote, index = [], [], "", 0
    while index < len(line):
        char = line[index]
        if quote == "'":
            quote = "" if char == "'" else quote
            current.append(char)
        elif char == "$" and line[index + 1 : index + 2] == "(":
            parts.append("".join(current))
            current, index = [], index + 2
            continue
        elif quote == '"':
            quote = "" if char == '"' and line[index - 1 : index] != "\\" else quote
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in "|;&`":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return [part for part in parts if part.strip()][:32]


def _installed(program: str, rest: str, path: str, number: int, line: str, budget: Budget) -> None:
    known = INSTALLERS.get(program)
    if known is None:
        return
    ecosystem, verbs = known
    words = rest.split()
    for verb in verbs:
        verb_words = verb.split()
        if words[: len(verb_words)] != verb_words:
            continue
        arguments = words[len(verb_words) :]
        skip_next = False
        for word in arguments[:40]:
            if skip_next:
                skip_next = False
                continue
            if word in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable", "--index-url", "-i", "-p"):
                skip_next = word not in ("-e", "--editable")
                continue
            if word.startswith("-") or word.startswith("$") or "=" in word and ecosystem != "pypi":
                continue
            if program in ("npx", "uvx", "bunx", "pipx") or (verb in ("run", "exec", "dlx", "x", "tool run")):
                budget.add(PACKAGE, f"{ecosystem}:{word.strip(chr(34) + chr(39))}", path, number, line)
                return  # what follows are the package's own arguments
            budget.add(PACKAGE, f"{ecosystem}:{word.strip(chr(34) + chr(39))}", path, number, line)
        return
