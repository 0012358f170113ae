"""JS and TS, line by line: environment reads, child_process, fetch and writes."""

from __future__ import annotations

from registry.skillformat.capabilities.model import COMMAND, NETWORK, Budget
from registry.skillformat.capabilities.patterns import DENO_ENV, JS_ENV, JS_EXEC, JS_NETWORK_CALL, JS_WRITE
from registry.skillformat.capabilities.shell import shell_line
from registry.skillformat.capabilities.text import env_read, numbered_lines, secrets_in, urls_in, write_found


def read_js(text: str, path: str, first_line: int, budget: Budget) -> None:
    for number, line in numbered_lines(text, first_line):
        if budget.spent:
            return
        stripped = line.strip()
        if stripped.startswith("//") or stripped.startswith("*"):
            continue
        urls_in(line, path, number, budget)
        secrets_in(line, path, number, budget)
        for match in JS_ENV.finditer(line):
            env_read(match.group(1) or match.group(2), path, number, line, budget)
        for match in DENO_ENV.finditer(line):
            env_read(match.group(1), path, number, line, budget)
        for match in JS_EXEC.finditer(line):
            command = match.group(2)
            if command and command.split():
                shell_line(command, path, number, budget)
            else:
                budget.add(COMMAND, f"child_process.{match.group(1)}", path, number, line)
        for match in JS_NETWORK_CALL.finditer(line):
            if not match.group(2):  # a destination held in a variable
                budget.add(NETWORK, f"{match.group(1)}(…)", path, number, line)
        for match in JS_WRITE.finditer(line):
            if match.group(1).startswith(("/", "~")):
                write_found(match.group(1), path, number, line, budget)
