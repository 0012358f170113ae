"""Python, read with `ast` (never imported or run): calls, string constants, `os.environ`."""

from __future__ import annotations

import ast

from registry.skillformat.capabilities.model import COMMAND, FILE_MAX_BYTES, LINE_MAX_CHARS, NETWORK, Budget
from registry.skillformat.capabilities.patterns import (
    COMMAND_METHODS,
    HOSTNAME,
    PYTHON_COMMAND_CALLS,
    PYTHON_ENV_CALLS,
    PYTHON_NETWORK_NAMES,
    PYTHON_NETWORK_PREFIXES,
    URL,
)
from registry.skillformat.capabilities.shell import shell_line
from registry.skillformat.capabilities.text import env_read, numbered_lines, secrets_in, urls_in, write_found


def read_python(text: str, path: str, first_line: int, budget: Budget) -> None:
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Not Python this interpreter reads (Python 2, a template, a fragment): read its text.
        for number, line in numbered_lines(text, first_line):
            if budget.spent:
                return
            urls_in(line, path, number, budget)
            secrets_in(line, path, number, budget)
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
                urls_in(line[:LINE_MAX_CHARS], path, number + offset, budget)
                secrets_in(line[:LINE_MAX_CHARS], path, number + offset, budget)
        elif isinstance(node, ast.Call):
            _python_call(node, path, number, excerpt, budget, aliases)
        elif isinstance(node, ast.Subscript) and _dotted(node.value) in ("os.environ", "environ"):
            name = _constant_text(node.slice)
            if name:
                env_read(name, path, number, excerpt, budget)


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


def _python_call(node: ast.Call, path: str, number: int, excerpt: str, budget: Budget, aliases: dict[str, str]) -> None:
    name = _dotted(node.func)
    if not name:
        return
    head, _, rest = name.partition(".")
    if head in aliases:
        name = f"{aliases[head]}.{rest}" if rest else aliases[head]
    if name.rsplit(".", 1)[-1] in COMMAND_METHODS and "." in name:  # __import__("os").system(...)
        name = "os." + name.rsplit(".", 1)[-1] if name.rsplit(".", 1)[-1] in ("system", "popen") else name
    first = node.args[0] if node.args else None
    if name in PYTHON_COMMAND_CALLS or name.rsplit(".", 1)[-1] in COMMAND_METHODS:
        command = _command_text(first)
        if command:
            shell_line(command, path, number, budget)
        else:
            budget.add(COMMAND, f"{name}(…)", path, number, excerpt)
        return
    if name in PYTHON_ENV_CALLS:
        variable = _constant_text(first)
        if variable:
            env_read(variable, path, number, excerpt, budget)
        return
    if name.startswith(PYTHON_NETWORK_PREFIXES) or name.split(".")[-1] in PYTHON_NETWORK_NAMES:
        text = _constant_text(first) or ""
        if HOSTNAME.fullmatch(text):  # HTTPSConnection("api.example.com"), create_connection
            budget.add(NETWORK, text.lower(), path, number, excerpt)
        elif not URL.search(text) and not _is_configuration(name):
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


def _outside(target: str, path: str, number: int, excerpt: str, budget: Budget) -> None:
    """A written path that leaves the skill's folder: absolute, in the home folder, or up `..`."""
    if target.startswith(("/", "~")) or target.startswith("..") or "/../" in target:
        write_found(target, path, number, excerpt, budget)
