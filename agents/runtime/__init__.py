"""The agent runtime core: a plain Python package with no Django imports (STYLE.md).

It takes plain data in (a TurnRequest, a SkillStore, the registry's Resolution, a ToolRegistry)
and gives plain data back (a TurnResult, trace events through a TraceSink). litellm is imported
only when a model is called or tokens are counted.
"""

from agents.runtime.builtin_tools import default_tool_registry
from agents.runtime.llm import LLMError, LLMResponse, ToolCall, TransientLLMError, complete
from agents.runtime.loop import run_turn
from agents.runtime.providers import register_providers
from agents.runtime.tools import Tool, ToolContext, ToolFailure, ToolRegistry, ToolResult
from agents.runtime.types import (
    Resolution,
    SkillActivation,
    SkillDocument,
    SkillExecution,
    SkillStore,
    SkillSummary,
    TraceSink,
    TurnRequest,
    TurnResult,
)
from registry.matching.fired_rule import FiredRule

__all__ = [
    "FiredRule",
    "LLMError",
    "LLMResponse",
    "Resolution",
    "SkillActivation",
    "SkillDocument",
    "SkillExecution",
    "SkillStore",
    "SkillSummary",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "TraceSink",
    "TransientLLMError",
    "TurnRequest",
    "TurnResult",
    "complete",
    "default_tool_registry",
    "register_providers",
    "run_turn",
]
