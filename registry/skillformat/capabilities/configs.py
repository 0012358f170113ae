"""JSON and requirements files: MCP server configs, package.json dependencies, requirements*.txt."""

from __future__ import annotations

import json

from registry.skillformat.capabilities.model import FILE_MAX_BYTES, MCP, PACKAGE, Budget
from registry.skillformat.capabilities.patterns import REQUIREMENT
from registry.skillformat.capabilities.shell import shell_line
from registry.skillformat.capabilities.text import env_read, numbered_lines, urls_in


def read_json(text: str, path: str, first_line: int, budget: Budget) -> None:
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
            shell_line(" ".join([server["command"], *arguments]), path, number, budget)
        if isinstance(server.get("url"), str):
            urls_in(server["url"], path, number, budget)
        for variable in list(server.get("env") or {})[:50] if isinstance(server.get("env"), dict) else []:
            env_read(str(variable), path, number, f'"{variable}"', budget)


def read_requirements(text: str, path: str, first_line: int, budget: Budget) -> None:
    for number, line in numbered_lines(text, first_line):
        requirement = line.split("#", 1)[0].strip()
        if requirement and not requirement.startswith("-"):
            name = REQUIREMENT.search(requirement)
            if name:
                budget.add(PACKAGE, f"pypi:{name.group(1)}", path, number, line)
        urls_in(line, path, number, budget)
