"""The tool registry a turn gets: the runtime's built-in tools plus any named in settings.

`AGENT_EXTRA_TOOLS` lists dotted paths to `agents.runtime.tools.Tool` objects (or callables
returning one), so a deployment can add tools without changing this code.
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.sandbox import Isolation, SandboxLimits
from agents.runtime.tools import Tool, ToolRegistry


@cache
def _extra_tools() -> tuple[Tool, ...]:
    tools = []
    for path in settings.AGENT_EXTRA_TOOLS:
        try:
            obj = import_string(path)
        except ImportError as error:
            raise ImproperlyConfigured(f"AGENT_EXTRA_TOOLS: cannot import {path}: {error}") from error
        tool = obj() if callable(obj) and not isinstance(obj, Tool) else obj
        if not isinstance(tool, Tool):
            raise ImproperlyConfigured(f"AGENT_EXTRA_TOOLS: {path} is not an agents.runtime.tools.Tool")
        tools.append(tool)
    return tuple(tools)


def tool_registry() -> ToolRegistry:
    return ToolRegistry(_tools(settings.RUN_SKILL_SANDBOX, settings.RUN_SKILL_MEMORY_BYTES))


@cache
def _tools(isolation: str, run_memory_bytes: int) -> tuple[Tool, ...]:
    """Made once per process (and sandbox setting), not per turn: a Tool checks its schema when
    made and builds its validator on first use, which each turn would otherwise pay before its
    first model call. Tools hold no state of a turn, so turns share them."""
    limits = SandboxLimits(run_memory_bytes=run_memory_bytes)
    return tuple(default_tool_registry(_extra_tools(), isolation=Isolation(isolation), limits=limits))
