"""AGENT_EXTRA_TOOLS extends the tool registry a turn gets, and a bad entry fails loudly."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents import tools
from agents.runtime.tools import Tool, ToolResult

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
    tools._extra_tools.cache_clear()
    tools._tools.cache_clear()
    yield
    tools._extra_tools.cache_clear()
    tools._tools.cache_clear()


@pytest.mark.parametrize("path", ["tests.agents.test_tools_setting.ECHO", "tests.agents.test_tools_setting.make_echo"])
def test_a_tool_named_in_settings_is_offered_beside_the_built_in_ones(settings, path):
    settings.AGENT_EXTRA_TOOLS = [path]

    registry = tools.tool_registry()

    assert registry.get("echo") is ECHO
    assert {"read_skill", "run_skill", "abort", "file_read", "calculator"} <= set(registry.names())


@pytest.mark.parametrize(
    "path, message",
    [("tests.agents.nowhere.TOOL", "cannot import"), ("tests.agents.test_tools_setting.pytest", "is not an")],
)
def test_a_bad_entry_is_a_configuration_error(settings, path, message):
    settings.AGENT_EXTRA_TOOLS = [path]
    with pytest.raises(ImproperlyConfigured, match=message):
        tools.tool_registry()
