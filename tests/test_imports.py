"""Layering: the registry never imports the agents app, and a function-level import exists only
for a heavy library (litellm, tiktoken) or where Django asks for one (AppConfig.ready)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = {"litellm", "tiktoken"}


def _sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def test_registry_imports_nothing_from_agents():
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _sources("registry")
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(name == "agents" or name.startswith("agents.") for name in _imported(node))
    ]
    assert found == []


def test_function_level_imports_are_only_for_heavy_libraries_or_app_ready():
    found = []
    for path, tree in _sources("agents", "registry", "config"):
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name == "ready":
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    if not all(name.split(".")[0] in HEAVY for name in _imported(node)):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {', '.join(_imported(node))}")
    assert found == []
