"""AGENT_EXTRA_TOOLS extends the tool registry a turn gets, and a bad entry fails loudly."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.runtime.tools import Tool, ToolResult
from agents.turns import tools as turn_tools

ECHO = Tool(
    name="echo",
    description="Repeat the text back.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    run=lambda arguments, context: ToolResult(ok=True, content=arguments["text"]),
)


def make_echo() -> Tool:
    return ECHO


@pytest.fixture(autouse=True)
def _fresh_tool_cache():
    turn_tools._extra_tools.cache_clear()
    turn_tools._tools.cache_clear()
    yield
    turn_tools._extra_tools.cache_clear()
    turn_tools._tools.cache_clear()


@pytest.mark.parametrize(
    "path", ["tests.agents.turns.test_turn_tools.ECHO", "tests.agents.turns.test_turn_tools.make_echo"]
)
def test_a_tool_named_in_settings_is_offered_beside_the_built_in_ones(settings, path):
    settings.AGENT_EXTRA_TOOLS = [path]

    registry = turn_tools.tool_registry()

    assert registry.get("echo") is ECHO
    assert {"read_skill", "run_skill", "abort", "file_read", "calculator"} <= set(registry.names())


@pytest.mark.parametrize(
    "path, message",
    [("tests.agents.nowhere.TOOL", "cannot import"), ("tests.agents.turns.test_turn_tools.pytest", "is not an")],
)
def test_a_bad_entry_is_a_configuration_error(settings, path, message):
    settings.AGENT_EXTRA_TOOLS = [path]
    with pytest.raises(ImproperlyConfigured, match=message):
        turn_tools.tool_registry()
