"""The size of the code's units, read with `ast`: no function over 70 lines and no class over 300
in agents/, registry/ and config/ (migrations aside), and few `except` clauses in the console's
views, which leave domain errors to the one console helper (registry/console/errors.py)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "registry", "config")
MAX_FUNCTION_LINES = 70
MAX_CLASS_LINES = 300
CONSOLE_VIEWS = (
    "registry/console/*.py",
    "agents/turns/playground.py",
    "agents/turns/console.py",
    "agents/evals/console.py",
)
MAX_CONSOLE_EXCEPTS = 10


def _trees(*patterns: str):
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path))


def _lines(node: ast.AST) -> int:
    """From the first decorator to the last line of the body."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return node.end_lineno - first + 1  # type: ignore[attr-defined]


def _oversized() -> list[str]:
    found = []
    for path, tree in _trees(*(f"{package}/**/*.py" for package in PACKAGES)):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _lines(node) > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.name}")
            elif isinstance(node, ast.ClassDef) and _lines(node) > MAX_CLASS_LINES:
                found.append(f"{path}:{node.name}")
    return found


def test_no_function_is_over_70_lines_and_no_class_over_300():
    assert _oversized() == []


def test_the_console_views_have_at_most_ten_except_clauses():
    sites = [
        f"{path}:{node.lineno}"
        for path, tree in _trees(*CONSOLE_VIEWS)
        for node in ast.walk(tree)
        if isinstance(node, ast.ExceptHandler)
    ]
    assert len(sites) <= MAX_CONSOLE_EXCEPTS, sites
