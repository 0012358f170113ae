"""What the readers look for: the RE2 patterns (linear in the text they read) and word lists."""

from __future__ import annotations

import re2


def _re(pattern: str, *, case_sensitive: bool = True):
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    return re2.compile(pattern, options)


URL = _re(
    # scheme, optional user:password@, host, port, rest
    r"\b(?:https?|wss?|ftp)://(?:[^\s/@:\"'`<>]{1,100}(?::[^\s/@\"'`<>]{0,100})?@)?([A-Za-z0-9](?:[A-Za-z0-9.-]{0,250}[A-Za-z0-9])?)(?::\d{1,5})?[^\s\"'`<>()\[\]{}]*"
)
# Hosts named as XML/RDF namespaces and schema ids, which nothing fetches.
NAMESPACE_HOSTS = _re(
    r"^(?:www\.w3\.org|schemas\.openxmlformats\.org|schemas\.microsoft\.com|purl\.org|ns\.adobe\.com|"
    r"schemas\.xmlsoap\.org|json-schema\.org|www\.openxmlformats\.org|xml\.org|"
    r"localhost|127\.0\.0\.1|0\.0\.0\.0)$",
    case_sensitive=False,
)
# Names of variables that hold secrets: GITHUB_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY.
CREDENTIAL_NAME = _re(r"\b([A-Z][A-Z0-9_]{0,80}_(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?))\b")
# Names ending like a secret that hold none.
NOT_SECRETS = frozenset(
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
CREDENTIAL_PATH = _re(
    r"(?:~|\$HOME|\$\{HOME\}|/home/[A-Za-z0-9_.-]+|/root)/(\.ssh|\.aws|\.netrc|\.git-credentials|\.gnupg|"
    r"\.kube/config|\.docker/config\.json|\.npmrc|\.pypirc|\.config/gh|\.config/gcloud|\.azure)\b"
)
SHELL_VAR = _re(r"\$\{?([A-Za-z_][A-Za-z0-9_]{0,80})")
MCP_TOOL = _re(r"\bmcp__([A-Za-z0-9][A-Za-z0-9_-]{0,80}?)__[A-Za-z0-9_-]")
MCP_PACKAGE = _re(
    r"(@modelcontextprotocol/server-[A-Za-z0-9_.-]+|\b[a-z0-9][a-z0-9_.-]*-mcp-server\b|\bmcp-server-[a-z0-9_.-]+)"
)
FENCE = _re(r"^\s{0,3}(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
INLINE_CODE = _re(r"`([^`]{1,500})`")
SHEBANG = _re(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?([A-Za-z]+)")
# Shell: a segment's program after `sudo`, `env`, VAR=value assignments and a `$ ` prompt.
CASE_LABEL = _re(r"^\(?[A-Za-z0-9_*.|\"'@:-]+\)(?:\s|$)")
HEREDOC = _re(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]{0,40})['\"]?")
FUNCTION = _re(r"(?m)^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_.:-]{0,80})\s*\(\s*\)")
PROGRAM = _re(
    r"^\s*(?:\$\s+)?(?:(?:sudo|env|exec|time|nohup|command)\s+)*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([A-Za-z0-9_./-]{1,80})"
)
PLACEHOLDER = _re(r"<[A-Za-z][A-Za-z0-9_ .-]{0,60}>")
# A file a shell line writes to: from `~`, `/` or a variable (`$HOME/...`), up to the word's end.
_PATH_REST = r"[^\s;|&)]{0,300}"
_WRITTEN_PATH = rf"([~/$]{_PATH_REST})"
REDIRECT = _re(rf"(?:^|[^0-9&<>=-])>{{1,2}}\s*{_WRITTEN_PATH}")
TEE = _re(rf"\btee\s+(?:-a\s+)?{_WRITTEN_PATH}")
DOWNLOAD_TARGET = _re(rf"(?:\s-O|\s-o|--output(?:-document)?=?)\s*([~/]{_PATH_REST})")
COPY_TARGET = _re(rf"\b(?:cp|mv|install|ln|rsync)\s+(?:-\S+\s+)*\S+\s+{_WRITTEN_PATH}\s*$")
# JS/TS
JS_ENV = _re(
    r"\b(?:process\.env|Bun\.env|import\.meta\.env)(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*['\"]([^'\"]{1,80})['\"]\s*\])"
)
DENO_ENV = _re(r"\bDeno\.env\.get\(\s*['\"]([^'\"]{1,80})['\"]")
JS_EXEC = _re(
    r"\b(?:child_process\.)?(exec|execSync|execFile|execFileSync|spawn|spawnSync|fork)\s*\(\s*(?:['\"`]([^'\"`]{0,300}))?"
)
JS_NETWORK_CALL = _re(r"\b(fetch|axios(?:\.[a-z]+)?|https?\.(?:get|request)|WebSocket|got|ky)\s*\(\s*(['\"`]?)")
JS_WRITE = _re(
    r"\b(?:fs\.)?(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream)\s*\(\s*['\"`]([^'\"`]{1,300})"
)
REQUIREMENT = _re(r"^([A-Za-z0-9][A-Za-z0-9._-]{0,100})")
CODE_LANGUAGES = {
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
EXTENSIONS = {
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
SHELL_WORDS = frozenset(
    "if then else elif fi for while until do done case esac in function return exit export local set unset "
    "shift read echo printf cd pushd popd true false test [ [[ ] ]] { } ( ) source . alias declare typeset "
    "readonly trap wait break continue let eval_ : # $ -- usage end select not".split()
)
INSTALLERS = {
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
PYTHON_COMMAND_CALLS = frozenset(
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
COMMAND_METHODS = frozenset({"system", "popen", "Popen", "check_output", "check_call", "getoutput", "spawn"})
PYTHON_NETWORK_PREFIXES = (
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
PYTHON_NETWORK_NAMES = frozenset({"urlopen"})
HOSTNAME = _re(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24}$")
PYTHON_ENV_CALLS = frozenset({"os.getenv", "os.environ.get", "environ.get", "getenv", "os.environ.setdefault"})
