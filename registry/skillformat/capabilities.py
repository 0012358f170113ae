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

import ast
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import re2

from registry.skillformat.bundle import SKILL_MD, Bundle
from registry.skillformat.skillmd import parse_skill_md

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


# --- patterns ------------------------------------------------------------------------------


def _re(pattern: str, *, case_sensitive: bool = True):
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    return re2.compile(pattern, options)


_URL = _re(
    # scheme, optional user:password@, host, port, rest
    r"\b(?:https?|wss?|ftp)://(?:[^\s/@:\"'`<>]{1,100}(?::[^\s/@\"'`<>]{0,100})?@)?([A-Za-z0-9](?:[A-Za-z0-9.-]{0,250}[A-Za-z0-9])?)(?::\d{1,5})?[^\s\"'`<>()\[\]{}]*"
)
# Hosts named as XML/RDF namespaces and schema ids, which nothing fetches.
_NAMESPACE_HOSTS = _re(
    r"^(?:www\.w3\.org|schemas\.openxmlformats\.org|schemas\.microsoft\.com|purl\.org|ns\.adobe\.com|"
    r"schemas\.xmlsoap\.org|json-schema\.org|www\.openxmlformats\.org|xml\.org|"
    r"localhost|127\.0\.0\.1|0\.0\.0\.0)$",
    case_sensitive=False,
)
# Names of variables that hold secrets: GITHUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY.
_CREDENTIAL_NAME = _re(r"\b([A-Z][A-Z0-9_]{0,80}_(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?))\b")
# Names ending like a secret that hold none.
_NOT_SECRETS = frozenset(
    {
        "PRIMARY_KEY",
        "FOREIGN_KEY",
        "SORT_KEY",
        "CACHE_KEY",
        "PARTITION_KEY",
        "UNIQUE_KEY",
        "HASH_KEY",
        "RANGE_KEY",
        "NEXT_TOKEN",
        "MAX_TOKEN",
        "PAGE_TOKEN",
        "SORT_TOKEN",
        "END_TOKEN",
        "START_TOKEN",
    }
)
_CREDENTIAL_PATH = _re(
    r"(?:~|\$HOME|\$\{HOME\}|/home/[A-Za-z0-9_.-]+|/root)/(\.ssh|\.aws|\.netrc|\.git-credentials|\.gnupg|"
    r"\.kube/config|\.docker/config\.json|\.npmrc|\.pypirc|\.config/gh|\.config/gcloud|\.azure)\b"
)
_SHELL_VAR = _re(r"\$\{?([A-Za-z_][A-Za-z0-9_]{0,80})")
_MCP_TOOL = _re(r"\bmcp__([A-Za-z0-9][A-Za-z0-9_-]{0,80}?)__[A-Za-z0-9_-]")
_MCP_PACKAGE = _re(
    r"(@modelcontextprotocol/server-[A-Za-z0-9_.-]+|\b[a-z0-9][a-z0-9_.-]*-mcp-server\b|\bmcp-server-[a-z0-9_.-]+)"
)
_FENCE = _re(r"^\s{0,3}(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
_INLINE_CODE = _re(r"`([^`]{1,500})`")
_SHEBANG = _re(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?([A-Za-z]+)")
# Shell: a segment's program after `sudo`, `env`, VAR=value assignments and a `$ ` prompt.
_CASE_LABEL = _re(r"^\(?[A-Za-z0-9_*.|\"'@:-]+\)(?:\s|$)")
_HEREDOC = _re(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]{0,40})['\"]?")
_FUNCTION = _re(r"(?m)^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_.:-]{0,80})\s*\(\s*\)")
_PROGRAM = _re(
    r"^\s*(?:\$\s+)?(?:(?:sudo|env|exec|time|nohup|command)\s+)*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([A-Za-z0-9_./-]{1,80})"
)
_PLACEHOLDER = _re(r"<[A-Za-z][A-Za-z0-9_ .-]{0,60}>")
_REDIRECT = _re(r"(?:^|[^0-9&<>=-])>{1,2}\s*([~/$][^\s;|&)]{0,300})")
_TEE = _re(r"\btee\s+(?:-a\s+)?([~/$][^\s;|&)]{0,300})")
_DOWNLOAD_TARGET = _re(r"(?:\s-O|\s-o|--output(?:-document)?=?)\s*([~/][^\s;|&)]{0,300})")
_COPY_TARGET = _re(r"\b(?:cp|mv|install|ln|rsync)\s+(?:-\S+\s+)*\S+\s+([~/$][^\s;|&)]{0,300})\s*$")
# JS/TS
_JS_ENV = _re(
    r"\b(?:process\.env|Bun\.env|import\.meta\.env)(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*['\"]([^'\"]{1,80})['\"]\s*\])"
)
_DENO_ENV = _re(r"\bDeno\.env\.get\(\s*['\"]([^'\"]{1,80})['\"]")
_JS_EXEC = _re(
    r"\b(?:child_process\.)?(exec|execSync|execFile|execFileSync|spawn|spawnSync|fork)\s*\(\s*(?:['\"`]([^'\"`]{0,300}))?"
)
_JS_NETWORK_CALL = _re(r"\b(fetch|axios(?:\.[a-z]+)?|https?\.(?:get|request)|WebSocket|got|ky)\s*\(\s*(['\"`]?)")
_JS_WRITE = _re(
    r"\b(?:fs\.)?(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream)\s*\(\s*['\"`]([^'\"`]{1,300})"
)
_REQUIREMENT = _re(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,100})")
_CODE_LANGUAGES = {
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "zsh": "shell",
    "console": "shell",
    "terminal": "shell",
    "shellsession": "shell",
    "powershell": "shell",
    "ps1": "shell",
    "python": "python",
    "py": "python",
    "python3": "python",
    "js": "js",
    "javascript": "js",
    "ts": "js",
    "typescript": "js",
    "jsx": "js",
    "tsx": "js",
    "mjs": "js",
    "json": "json",
}
_EXTENSIONS = {
    ".py": "python",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".ps1": "shell",
    ".js": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "js",
    ".tsx": "js",
    ".jsx": "js",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
}
# Words that start shell lines without running a program of their own.
_SHELL_WORDS = frozenset(
    "if then else elif fi for while until do done case esac in function return exit export local set unset "
    "shift read echo printf cd pushd popd true false test [ [[ ] ]] { } ( ) source . alias declare typeset "
    "readonly trap wait break continue let eval_ : # $ -- usage end select not".split()
)
_INSTALLERS = {
    "pip": ("pypi", ("install",)),
    "pip3": ("pypi", ("install",)),
    "pipx": ("pypi", ("install", "run")),
    "uv": ("pypi", ("add", "pip install", "tool install", "tool run")),
    "uvx": ("pypi", ("",)),
    "npm": ("npm", ("install", "i", "add", "exec")),
    "pnpm": ("npm", ("add", "install", "i", "dlx")),
    "yarn": ("npm", ("add", "dlx", "global add")),
    "bun": ("npm", ("add", "install", "i", "x")),
    "bunx": ("npm", ("",)),
    "npx": ("npm", ("",)),
    "brew": ("brew", ("install",)),
    "apt": ("apt", ("install",)),
    "apt-get": ("apt", ("install",)),
    "gem": ("gem", ("install",)),
    "cargo": ("crates", ("install", "add")),
    "go": ("go", ("install", "get")),
}
_PYTHON_COMMAND_CALLS = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
        "os.system",
        "os.popen",
        "os.execv",
        "os.execvp",
        "os.execve",
        "os.execl",
        "os.execlp",
        "os.spawnv",
        "os.spawnl",
        "os.spawnlp",
        "os.spawnvp",
        "os.posix_spawn",
        "os.posix_spawnp",
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "pty.spawn",
    }
)
# Methods that run a program whatever object they hang on (an obfuscated `__import__("os")`).
_COMMAND_METHODS = frozenset({"system", "popen", "Popen", "check_output", "check_call", "getoutput", "spawn"})
_PYTHON_NETWORK_PREFIXES = (
    "requests.",
    "httpx.",
    "urllib.request.",
    "urllib3.",
    "aiohttp.",
    "http.client.",
    "socket.create_connection",
    "smtplib.",
    "ftplib.",
    "paramiko.",
    "websocket.",
    "websockets.",
)
_PYTHON_NETWORK_NAMES = frozenset({"urlopen"})
_HOSTNAME = _re(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24}$")
_PYTHON_ENV_CALLS = frozenset({"os.getenv", "os.environ.get", "environ.get", "getenv", "os.environ.setdefault"})


# --- the walk ------------------------------------------------------------------------------


class _Budget:
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


def bundle_capabilities(bundle: Bundle) -> Manifest:
    """The capability manifest of a bundle (SKILL.md and every regular file, links skipped:
    their target is read under its own path)."""
    files = [(SKILL_MD, bundle.skill_md)] + [(f.path, f.content) for f in bundle.files if f.link is None]
    return files_capabilities(files)


def files_capabilities(files: Iterable[tuple[str, bytes]]) -> Manifest:
    budget = _Budget()
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
            _READERS[kind](text, path, 1, budget)
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
    if dot > 0 and name[dot:].lower() in _EXTENSIONS:
        return _EXTENSIONS[name[dot:].lower()]
    if content.startswith(b"#!"):
        first = content[:200].split(b"\n", 1)[0].decode("utf-8", "replace")
        found = _SHEBANG.search(first)
        program = found.group(1).lower() if found else ""
        if program.startswith("python"):
            return "python"
        if program in ("node", "deno", "bun", "tsx", "ts"):
            return "js"
        return "shell"
    if dot < 0 and name in ("Makefile", "Dockerfile", "Justfile"):
        return "shell"
    return None


def _lines(text: str, first_line: int) -> Iterator[tuple[int, str]]:
    for offset, line in enumerate(text.split("\n")):
        yield first_line + offset, line[:LINE_MAX_CHARS]


def _allowed_tools(content: bytes, budget: _Budget) -> None:
    try:
        parsed = parse_skill_md(content)
    except Exception:  # noqa: BLE001 - a SKILL.md that does not parse has no tools to list
        return
    line = parsed.field_lines.get("allowed-tools") or parsed.field_lines.get("allowed_tools") or 1
    for tool in parsed.allowed_tools:
        budget.add(TOOL, tool, SKILL_MD, line, f"allowed-tools: {tool}")
        for server in _MCP_TOOL.finditer(tool):
            budget.add(MCP, server.group(1), SKILL_MD, line, tool)


# --- text found in any file ----------------------------------------------------------------


def _host_of(match) -> str:
    return match.group(1).lower().rstrip(".")


def _urls(line: str, path: str, number: int, budget: _Budget) -> None:
    for match in _URL.finditer(line):
        host = _host_of(match)
        if "." not in host or _NAMESPACE_HOSTS.search(host):
            continue
        budget.add(NETWORK, host, path, number, match.group(0))


def _secrets(line: str, path: str, number: int, budget: _Budget) -> None:
    for match in _CREDENTIAL_NAME.finditer(line):
        if match.group(1) not in _NOT_SECRETS:
            budget.add(CREDENTIAL, match.group(1), path, number, line)
    for match in _CREDENTIAL_PATH.finditer(line):
        budget.add(CREDENTIAL, f"~/{match.group(1)}", path, number, line)
    for match in _MCP_TOOL.finditer(line):
        budget.add(MCP, match.group(1), path, number, line)
    for match in _MCP_PACKAGE.finditer(line):
        budget.add(MCP, match.group(1), path, number, line)


# --- shell ---------------------------------------------------------------------------------


def _read_shell(text: str, path: str, first_line: int, budget: _Budget) -> None:
    functions = frozenset(match.group(1) for match in _FUNCTION.finditer(text))
    heredoc, quote = None, ""
    for number, line in _lines(text, first_line):
        if budget.spent:
            return
        if quote:
            # Inside a string opened on an earlier line (a jq or awk program, a message): data.
            quote = _quote_after(line, quote)
            _urls(line, path, number, budget)
            _secrets(line, path, number, budget)
            continue
        if heredoc is not None:
            # A here-document is data (or another language's source): name what it points at.
            if line.strip() == heredoc:
                heredoc = None
            else:
                _urls(line, path, number, budget)
                _secrets(line, path, number, budget)
            continue
        _shell_line(line, path, number, budget, functions)
        quote = _quote_after(line, "")
        opened = _HEREDOC.search(line)
        if opened:
            heredoc = opened.group(1)


def _shell_line(line: str, path: str, number: int, budget: _Budget, functions: frozenset[str] = frozenset()) -> None:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return
    _urls(line, path, number, budget)
    _secrets(line, path, number, budget)
    for match in _SHELL_VAR.finditer(line):
        name = match.group(1)
        if _is_secret_name(name):
            budget.add(CREDENTIAL, name, path, number, line)
    # A `>` in a sed expression, a message or a `<placeholder>` is no redirection.
    bare = _PLACEHOLDER.sub(lambda match: " " * len(match.group(0)), _unquoted(line))
    for pattern in (_REDIRECT, _TEE, _COPY_TARGET, _DOWNLOAD_TARGET):
        for match in pattern.finditer(bare):
            _written(match.group(1), path, number, line, budget)
    case_label = _CASE_LABEL.search(stripped)
    if case_label:  # `cpu|CPU) profile=...`: a case's patterns, then its command
        stripped = stripped[case_label.end() :]
    for segment in _split_segments(stripped):
        found = _PROGRAM.search(segment)
        if not found:
            continue
        program = found.group(1).rsplit("/", 1)[-1]
        follows = segment[found.end() : found.end() + 1]
        if (
            program.lower() in _SHELL_WORDS
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


def _installed(program: str, rest: str, path: str, number: int, line: str, budget: _Budget) -> None:
    known = _INSTALLERS.get(program)
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


def _written(target: str, path: str, number: int, line: str, budget: _Budget) -> None:
    target = target.strip("\"'")
    if target.startswith("/dev/") or target in ("/", "~", "$"):
        return
    if target.startswith("$") and not target.startswith(("$HOME", "${HOME}")):
        return  # a variable: where it points is not known here
    budget.add(WRITE, target, path, number, line)


# --- Markdown ------------------------------------------------------------------------------


def _read_markdown(text: str, path: str, first_line: int, budget: _Budget) -> None:
    block: list[str] | None = None
    block_language, block_start, fence = "", 0, ""
    for number, line in _lines(text, first_line):
        if budget.spent:
            return
        opened = _FENCE.search(line)
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
        _urls(line, path, number, budget)
        _secrets(line, path, number, budget)
        for code in _INLINE_CODE.finditer(line):
            span = code.group(1)
            word = span.split(maxsplit=1)[0] if span.split() else ""
            if word in _INSTALLERS or word in ("curl", "wget", "bash", "sh", "ssh", "scp", "git") or word == "$":
                _shell_line(span, path, number, budget)
    if block is not None:  # an unclosed fence runs to the end of the file
        _read_block(block_language, "\n".join(block), path, block_start + 1, budget)


def _read_block(language: str, text: str, path: str, first_line: int, budget: _Budget) -> None:
    kind = _CODE_LANGUAGES.get(language)
    if kind is None:
        # Unmarked or other blocks (text, yaml, …): name what they point at, run nothing.
        for number, line in _lines(text, first_line):
            _urls(line, path, number, budget)
            _secrets(line, path, number, budget)
        return
    _READERS[kind](text, path, first_line, budget)


# --- JSON (MCP server configs) ------------------------------------------------------------


def _read_json(text: str, path: str, first_line: int, budget: _Budget) -> None:
    """MCP server configs (`mcpServers`: each server, its command and URL) and package.json's
    dependencies; other JSON (lock files, manifests' homepages) names nothing the skill runs."""
    if len(text) > FILE_MAX_BYTES or not ('"mcpServers"' in text or path.endswith("package.json")):
        return
    try:
        config = json.loads(text)
    except (ValueError, RecursionError):
        return
    if not isinstance(config, dict):
        return
    lines = text.split("\n")

    def line_of(name: str) -> int:
        return next((i for i, line in enumerate(lines, first_line) if f'"{name}"' in line), first_line)

    for section in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        declared = config.get(section)
        if path.endswith("package.json") and isinstance(declared, dict):
            for name in list(declared)[:200]:
                budget.add(PACKAGE, f"npm:{name}", path, line_of(name), f'"{name}": {str(declared[name])[:40]}')
    servers = config.get("mcpServers")
    if not isinstance(servers, dict):
        return
    for name in list(servers)[:100]:
        number = line_of(name)
        budget.add(MCP, str(name), path, number, f'"{name}"')
        server = servers[name]
        if not isinstance(server, dict):
            continue
        if isinstance(server.get("command"), str):
            arguments = [str(a) for a in server.get("args", []) if isinstance(a, str | int)][:40]
            _shell_line(" ".join([server["command"], *arguments]), path, number, budget)
        if isinstance(server.get("url"), str):
            _urls(server["url"], path, number, budget)
        for variable in list(server.get("env") or {})[:50] if isinstance(server.get("env"), dict) else []:
            _env(str(variable), path, number, f'"{variable}"', budget)


def _read_requirements(text: str, path: str, first_line: int, budget: _Budget) -> None:
    for number, line in _lines(text, first_line):
        requirement = line.split("#", 1)[0].strip()
        if requirement and not requirement.startswith("-"):
            name = _REQUIREMENT.search(requirement)
            if name:
                budget.add(PACKAGE, f"pypi:{name.group(1)}", path, number, line)
        _urls(line, path, number, budget)


# --- JS / TS -------------------------------------------------------------------------------


def _read_js(text: str, path: str, first_line: int, budget: _Budget) -> None:
    for number, line in _lines(text, first_line):
        if budget.spent:
            return
        stripped = line.strip()
        if stripped.startswith("//") or stripped.startswith("*"):
            continue
        _urls(line, path, number, budget)
        _secrets(line, path, number, budget)
        for match in _JS_ENV.finditer(line):
            _env(match.group(1) or match.group(2), path, number, line, budget)
        for match in _DENO_ENV.finditer(line):
            _env(match.group(1), path, number, line, budget)
        for match in _JS_EXEC.finditer(line):
            command = match.group(2)
            if command and command.split():
                _shell_line(command, path, number, budget)
            else:
                budget.add(COMMAND, f"child_process.{match.group(1)}", path, number, line)
        for match in _JS_NETWORK_CALL.finditer(line):
            if not match.group(2):  # a destination held in a variable
                budget.add(NETWORK, f"{match.group(1)}(…)", path, number, line)
        for match in _JS_WRITE.finditer(line):
            if match.group(1).startswith(("/", "~")):
                _written(match.group(1), path, number, line, budget)


def _is_secret_name(name: str) -> bool:
    return bool(_CREDENTIAL_NAME.fullmatch(name)) and name not in _NOT_SECRETS


def _env(name: str, path: str, number: int, line: str, budget: _Budget) -> None:
    budget.add(CREDENTIAL if _is_secret_name(name) else ENV, name, path, number, line)


# --- Python --------------------------------------------------------------------------------


def _read_python(text: str, path: str, first_line: int, budget: _Budget) -> None:
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Not Python this interpreter reads (Python 2, a template, a fragment): read its text.
        for number, line in _lines(text, first_line):
            if budget.spent:
                return
            _urls(line, path, number, budget)
            _secrets(line, path, number, budget)
        return
    source_lines = text.split("\n")
    nodes = list(ast.walk(tree))  # one walk, read three times
    docstrings = _docstrings(nodes)
    aliases = _import_aliases(nodes)
    for node in nodes:
        if budget.spent:
            return
        number = first_line - 1 + getattr(node, "lineno", 1)
        excerpt = source_lines[node.lineno - 1][:LINE_MAX_CHARS] if hasattr(node, "lineno") else ""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            # "\udc9b" in a literal is a lone surrogate, which no UTF-8 text (nor RE2) holds.
            value = node.value[:FILE_MAX_BYTES].encode("utf-8", "replace").decode("utf-8")
            for offset, line in enumerate(value.split("\n")[:2000]):
                _urls(line[:LINE_MAX_CHARS], path, number + offset, budget)
                _secrets(line[:LINE_MAX_CHARS], path, number + offset, budget)
        elif isinstance(node, ast.Call):
            _python_call(node, path, number, excerpt, budget, aliases)
        elif isinstance(node, ast.Subscript) and _dotted(node.value) in ("os.environ", "environ"):
            name = _constant_text(node.slice)
            if name:
                _env(name, path, number, excerpt, budget)


def _docstrings(nodes: list[ast.AST]) -> set[int]:
    found = set()
    for node in nodes:
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < 10:
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):  # requests.Session().get(...)
        parts.append(_dotted(node.func) + "()")
    else:
        return ""
    return ".".join(reversed(parts))


def _constant_text(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _import_aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """Local names for what they import: `sp` -> `subprocess`, `run` -> `subprocess.run`."""
    aliases: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _python_call(
    node: ast.Call, path: str, number: int, excerpt: str, budget: _Budget, aliases: dict[str, str]
) -> None:
    name = _dotted(node.func)
    if not name:
        return
    head, _, rest = name.partition(".")
    if head in aliases:
        name = f"{aliases[head]}.{rest}" if rest else aliases[head]
    if name.rsplit(".", 1)[-1] in _COMMAND_METHODS and "." in name:  # __import__("os").system(...)
        name = "os." + name.rsplit(".", 1)[-1] if name.rsplit(".", 1)[-1] in ("system", "popen") else name
    first = node.args[0] if node.args else None
    if name in _PYTHON_COMMAND_CALLS or name.rsplit(".", 1)[-1] in _COMMAND_METHODS:
        command = _command_text(first)
        if command:
            _shell_line(command, path, number, budget)
        else:
            budget.add(COMMAND, f"{name}(…)", path, number, excerpt)
        return
    if name in _PYTHON_ENV_CALLS:
        variable = _constant_text(first)
        if variable:
            _env(variable, path, number, excerpt, budget)
        return
    if name.startswith(_PYTHON_NETWORK_PREFIXES) or name.split(".")[-1] in _PYTHON_NETWORK_NAMES:
        text = _constant_text(first) or ""
        if _HOSTNAME.fullmatch(text):  # HTTPSConnection("api.example.com"), create_connection
            budget.add(NETWORK, text.lower(), path, number, excerpt)
        elif not _URL.search(text) and not _is_configuration(name):
            budget.add(NETWORK, f"{name}(…)", path, number, excerpt)
        return
    if name in ("open", "io.open", "builtins.open") and first is not None:
        mode = _constant_text(node.args[1]) if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "mode":
                mode = _constant_text(keyword.value)
        target = _path_text(first)
        if target and mode and any(flag in mode for flag in "wax+"):
            _outside(target, path, number, excerpt, budget)
        return
    if name.endswith((".write_text", ".write_bytes", ".mkdir", ".touch")) and isinstance(node.func, ast.Attribute):
        target = _path_text(node.func.value)
        if target:
            _outside(target, path, number, excerpt, budget)
        return
    if (
        name in ("shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "shutil.copytree")
        and len(node.args) > 1
    ):
        target = _path_text(node.args[1])
        if target:
            _outside(target, path, number, excerpt, budget)


def _is_configuration(name: str) -> bool:
    """Names under a network module that build objects or parse, reaching nobody by themselves."""
    last = name.split(".")[-1]
    return last in (
        "Request",
        "Session",
        "ClientSession",
        "ClientTimeout",
        "Timeout",
        "HTTPError",
        "RequestException",
        "Response",
        "quote",
        "urlencode",
        "Client",
        "AsyncClient",
        "Limits",
        "HTTPAdapter",
        "Retry",
    )


def _command_text(node: ast.AST | None) -> str | None:
    text = _constant_text(node)
    if text is not None:
        return text
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        words = [_constant_text(element) for element in node.elts[:40]]
        if words[0]:
            return " ".join(word if word is not None else "$ARG" for word in words)
    return None


def _path_text(node: ast.AST) -> str | None:
    """A path given as a constant, `Path("…")`, `Path.home() / "…"` or `os.path.expanduser("…")`."""
    text = _constant_text(node)
    if text is not None:
        return text
    if isinstance(node, ast.Call) and node.args:
        name = _dotted(node.func)
        if name in ("Path", "pathlib.Path", "os.path.expanduser", "os.path.join", "Path.home().joinpath"):
            return _path_text(node.args[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = node.left
        if isinstance(left, ast.Call) and _dotted(left.func) in ("Path.home", "pathlib.Path.home"):
            rest = _constant_text(node.right)
            return f"~/{rest}" if rest else "~"
        inner = _path_text(left)
        rest = _constant_text(node.right)
        if inner is not None and rest is not None:
            return f"{inner.rstrip('/')}/{rest}"
    return None


def _outside(target: str, path: str, number: int, excerpt: str, budget: _Budget) -> None:
    """A written path that leaves the skill's folder: absolute, in the home folder, or up `..`."""
    if target.startswith(("/", "~")) or target.startswith("..") or "/../" in target:
        _written(target, path, number, excerpt, budget)


_READERS = {
    "requirements": _read_requirements,
    "python": _read_python,
    "shell": _read_shell,
    "js": _read_js,
    "markdown": _read_markdown,
    "json": _read_json,
}


# --- diff ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityChange:
    """One capability (kind and value) a version gained or lost, with where it appears."""

    kind: str
    value: str
    places: tuple[tuple[str, int], ...]  # (file, line), the first few
    sign: str  # "+" or "−"

    @property
    def gated(self) -> bool:
        return self.kind in GATED_KINDS

    @property
    def where(self) -> str:
        shown = ", ".join(f"{file}:{line}" for file, line in self.places[:3])
        more = len(self.places) - 3
        return shown + (f", +{more} more" if more > 0 else "")

    @property
    def phrase(self) -> str:
        """`network: api.example.com`, `reads GITHUB_TOKEN`."""
        title = KIND_TITLES[self.kind]
        return f"{title} {self.value}" if self.kind == CREDENTIAL else f"{title}: {self.value}"

    @property
    def text(self) -> str:
        return f"{self.sign} {self.phrase} ({self.where})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value,
            "places": [{"file": file, "line": line} for file, line in self.places],
            "text": self.text,
            "gated": self.gated,
        }


@dataclass(frozen=True)
class CapabilityDiff:
    added: tuple[CapabilityChange, ...] = ()
    removed: tuple[CapabilityChange, ...] = ()
    changes: tuple[CapabilityChange, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "changes", self.added + self.removed)

    @property
    def gated_added(self) -> tuple[CapabilityChange, ...]:
        """What the new version adds that a `new_capabilities` policy asks an admin about."""
        return tuple(change for change in self.added if change.gated)


PLACES_MAX = 20


def _grouped(manifest: Manifest) -> dict[tuple[str, str], list[tuple[str, int]]]:
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for entry in manifest.entries:
        places = groups.setdefault(entry.key, [])
        if len(places) < PLACES_MAX:
            places.append((entry.file, entry.line))
    return groups


def capabilities_diff(*, old: Manifest | None, new: Manifest) -> CapabilityDiff:
    """What `new` has that `old` lacks (`+`) and the reverse (`−`), by kind and value (a host, a
    command, a variable): a URL moved to another line or file is no change."""
    before, after = _grouped(old) if old is not None else {}, _grouped(new)

    def order(key: tuple[str, str]) -> tuple[int, str]:
        return (KINDS.index(key[0]), key[1])

    added = tuple(
        CapabilityChange(k, v, tuple(after[(k, v)]), "+") for k, v in sorted(set(after) - set(before), key=order)
    )
    removed = tuple(
        CapabilityChange(k, v, tuple(before[(k, v)]), "−") for k, v in sorted(set(before) - set(after), key=order)
    )
    return CapabilityDiff(added=added, removed=removed)
