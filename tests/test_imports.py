"""Layering, read from the code's imports (every import counts: module level, function level and
those under `if TYPE_CHECKING`):

- no import cycle between modules of agents, registry and config;
- selectors never import services (a read that writes hides a service in a selector);
- the registry never imports the agents app, and config (settings, URLs, Celery) imports nothing
  from it but the URL modules it mounts, named as strings;
- the agent runtime (agents/runtime/) imports nothing from Django, DRF or Celery, and from the
  registry only modules that import none of them either, however indirectly (read from the
  statements, and checked again by importing every runtime module in a fresh interpreter);
- at most six modules lie loose at the registry root besides `apps`, `models`, `admin` and `urls`,
  and at most four at the agents root besides those, `checks` and `tasks`: the rest live in a
  folder that names their concept (agents/turns/, agents/evals/, registry/services/, ...);
- the read model (registry/readmodel/, the generation included) imports none of the layers that
  read through it: selectors, services, the API, the console, MCP;
- no module imports its own package when that package's `__init__` runs code;
- the SKILL.md format (registry/skillformat/) and the matching libraries (registry/matching/) import
  nothing from Django, DRF or Celery, however indirectly, except the rule patterns, which read their
  limits from settings;
- a function-level import exists only for a heavy library (litellm, tiktoken) or where Django asks
  for one (AppConfig.ready).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "registry", "config")
HEAVY = {"litellm", "tiktoken"}
# Our modules built on a heavy library, imported where they are used for the same reason:
# registry.mcp.server is the `mcp` package's server (registry/mcp/views.py says why).
HEAVY_OWN = {"registry.mcp.server"}
FRAMEWORKS = ("django", "rest_framework", "celery")

ROOT_FRAMEWORK_MODULES = {"__init__", "apps", "models", "admin", "urls"}
AGENTS_ROOT_MODULES = ROOT_FRAMEWORK_MODULES | {"checks", "tasks"}
ABOVE_THE_READ_MODEL = ("registry.selectors", "registry.services", "registry.api", "registry.console", "registry.mcp")
PURE_PACKAGES = ("registry.skillformat", "registry.matching")
# RULE_QUERY_MAX_CHARS and the pattern limits are deployment settings; the index reads the query cut,
# and the trigger lookup ranks with the index.
READS_SETTINGS = {"registry.matching.patterns", "registry.matching.index", "registry.matching.triggers"}


def _sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, ast.Module]:
    return {_module_name(path): tree for path, tree in _sources(*PACKAGES)}


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The full names a statement in `module` imports: `from a.b import c` imports `a.b.c` when that
    is a module, else `a.b`; relative imports are made absolute."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        package = module.split(".") if _is_package(module) else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    names = {f"{base}.{alias.name}" for alias in node.names}
    found = {name for name in names if name in _modules()}
    return found | ({base} if found != names else set())


def _is_package(module: str) -> bool:
    return (ROOT / module.replace(".", "/") / "__init__.py").exists()


def _own(name: str) -> str | None:
    """The project module `name` is, or is inside of; None for a library."""
    while name and name not in _modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def _graph() -> dict[str, frozenset[str]]:
    """Every module and the full names it imports (project modules and libraries)."""
    graph = {}
    for module, tree in _modules().items():
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names |= _targets(module, node)
        graph[module] = frozenset(names)
    return graph


def _project_edges(module: str) -> set[str]:
    return {own for name in _graph()[module] if (own := _own(name)) not in (None, module)}


def import_cycles() -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in _project_edges(module):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(_graph()):
        if module not in index:
            visit(module)
    return cycles


def _is_framework(name: str) -> bool:
    return name.split(".")[0] in FRAMEWORKS or name.startswith("django_")


@cache
def _imports_a_framework(module: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether importing `module` imports Django, DRF or Celery, however indirectly (its packages'
    __init__ modules included)."""
    if any(_is_framework(name) for name in _graph()[module]):
        return True
    parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    nested = (_project_edges(module) | {p for p in parents if p in _modules()}) - seen - {module}
    return any(_imports_a_framework(target, seen | {module}) for target in nested)


def test_no_module_imports_itself_through_others():
    assert import_cycles() == []


def test_selectors_import_no_services():
    found = {
        (module, target)
        for module in _graph()
        if module.startswith("registry.selectors")
        for target in _project_edges(module)
        if target.startswith("registry.services")
    }
    assert found == set()


def test_registry_imports_nothing_from_agents():
    found = [
        f"{module} imports {name}"
        for module, names in _graph().items()
        if module.split(".")[0] == "registry"
        for name in names
        if name.split(".")[0] == "agents"
    ]
    assert found == []


def test_config_imports_nothing_from_agents():
    found = [
        f"{module} imports {name}"
        for module, names in _graph().items()
        if module.split(".")[0] == "config"
        for name in names
        if name.split(".")[0] == "agents"
    ]
    assert found == []


def test_the_agent_runtime_imports_no_framework_and_only_plain_registry_libraries():
    found = []
    for module, names in _graph().items():
        if not module.startswith("agents.runtime"):
            continue
        for name in names:
            own = _own(name)
            if _is_framework(name) or (own is not None and not own.startswith("agents.runtime")):
                if _is_framework(name) or not own.startswith("registry.") or _imports_a_framework(own):
                    found.append(f"{module} imports {name}")
    assert found == []


def test_importing_every_runtime_module_loads_no_framework():
    """The same rule as the agent runtime's above, as a fresh interpreter sees it: what the
    imports load, however they are written."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import agents.runtime as runtime\n"
        "for found in pkgutil.iter_modules(runtime.__path__):\n"
        "    importlib.import_module(f'agents.runtime.{found.name}')\n"
        f"print(sorted(name for name in sys.modules if name.split('.')[0] in {FRAMEWORKS!r}))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, env={"PATH": ""}
    )
    assert loaded.stdout.strip() == "[]"


def test_function_level_imports_are_only_for_heavy_libraries_or_app_ready():
    found = []
    for path, tree in _sources(*PACKAGES):
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name == "ready":
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    if not all(name.split(".")[0] in HEAVY or name in HEAVY_OWN for name in _imported(node)):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {', '.join(_imported(node))}")
    assert found == []


def test_few_modules_lie_loose_at_the_registry_root():
    loose = sorted(path.stem for path in (ROOT / "registry").glob("*.py") if path.stem not in ROOT_FRAMEWORK_MODULES)
    assert len(loose) <= 6, loose


def test_few_modules_lie_loose_at_the_agents_root():
    loose = sorted(path.stem for path in (ROOT / "agents").glob("*.py") if path.stem not in AGENTS_ROOT_MODULES)
    assert len(loose) <= 4, loose


def test_the_read_model_imports_no_layer_above_it():
    found = {
        (module, target)
        for module in _graph()
        if module.startswith("registry.readmodel")
        for target in _project_edges(module)
        if target.startswith(ABOVE_THE_READ_MODEL)
    }
    assert found == set()


def test_the_skill_format_and_matching_packages_import_no_framework():
    found = [
        module
        for module in _modules()
        if module.startswith(PURE_PACKAGES) and module not in READS_SETTINGS and _imports_a_framework(module)
    ]
    assert found == []
    assert all(module in _modules() for module in READS_SETTINGS)


def _runs_code(package: str) -> bool:
    """Whether the package's `__init__` holds more than a docstring and `from __future__`."""
    body = _modules()[package].body
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        for node in body
    )


def _own_package_imports() -> list[str]:
    """Statements that import a module's own package when its `__init__` runs code (`from
    agents.runtime import llm` inside agents/runtime/, whose `__init__` imports the loop): the
    `__init__` may be importing this very module, so a sibling is imported by its full name.
    Where the `__init__` is empty, `from registry.api import serializers` only names a sibling."""
    found = []
    for module, tree in _modules().items():
        if _is_package(module):
            continue
        package = module.rpartition(".")[0]
        if package not in _modules() or not _runs_code(package):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _from_base(module, node) == package:
                found.append(f"{module}:{node.lineno}")
    return found


def _from_base(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def test_no_module_imports_its_own_package():
    assert _own_package_imports() == []
