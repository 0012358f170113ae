"""What any text names, whatever the file: URLs (network), secrets and credential files, MCP
servers, environment reads and writes outside the skill's folder."""

from __future__ import annotations

from collections.abc import Iterator

from registry.skillformat.capabilities.model import CREDENTIAL, ENV, LINE_MAX_CHARS, MCP, NETWORK, WRITE, Budget
from registry.skillformat.capabilities.patterns import (
    CREDENTIAL_NAME,
    CREDENTIAL_PATH,
    MCP_PACKAGE,
    MCP_TOOL,
    NAMESPACE_HOSTS,
    NOT_SECRETS,
    URL,
)


def numbered_lines(text: str, first_line: int) -> Iterator[tuple[int, str]]:
    for offset, line in enumerate(text.split("\n")):
        yield first_line + offset, line[:LINE_MAX_CHARS]


def _host_of(match) -> str:
    return match.group(1).lower().rstrip(".")


def urls_in(line: str, path: str, number: int, budget: Budget) -> None:
    for match in URL.finditer(line):
        host = _host_of(match)
        if "." not in host or NAMESPACE_HOSTS.search(host):
            continue
        budget.add(NETWORK, host, path, number, match.group(0))


def secrets_in(line: str, path: str, number: int, budget: Budget) -> None:
    for match in CREDENTIAL_NAME.finditer(line):
        if match.group(1) not in NOT_SECRETS:
            budget.add(CREDENTIAL, match.group(1), path, number, line)
    for match in CREDENTIAL_PATH.finditer(line):
        budget.add(CREDENTIAL, f"~/{match.group(1)}", path, number, line)
    for match in MCP_TOOL.finditer(line):
        budget.add(MCP, match.group(1), path, number, line)
    for match in MCP_PACKAGE.finditer(line):
        budget.add(MCP, match.group(1), path, number, line)


def write_found(target: str, path: str, number: int, line: str, budget: Budget) -> None:
    target = target.strip("\"'")
    if target.startswith("/dev/") or target in ("/", "~", "$"):
        return
    if target.startswith("$") and not target.startswith(("$HOME", "${HOME}")):
        return  # a variable: where it points is not known here
    budget.add(WRITE, target, path, number, line)


def is_secret_name(name: str) -> bool:
    return bool(CREDENTIAL_NAME.fullmatch(name)) and name not in NOT_SECRETS


def env_read(name: str, path: str, number: int, line: str, budget: Budget) -> None:
    budget.add(CREDENTIAL if is_secret_name(name) else ENV, name, path, number, line)
