"""The context fitting's token counter (agents/runtime/llm.py CachingTokenCounter), through
litellm's real tokenizer."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.runtime import llm
from agents.runtime.builtin_tools import default_tool_registry

MESSAGES = [
    {"role": "system", "content": "You help with reports. " * 40},
    {"role": "user", "content": "Summarise the quarterly report."},
]


def test_the_count_is_each_message_and_the_tools_counted_on_their_own():
    specs = [tool.spec() for tool in default_tool_registry()]
    probe = [{"role": "user", "content": ""}]
    tools_share = llm.token_count("scripted", probe, specs) - llm.token_count("scripted", probe, [])
    each = sum(llm.token_count("scripted", [message], []) for message in MESSAGES)

    assert llm.CachingTokenCounter("scripted")(MESSAGES, specs) == each + tools_share
    # Counting message by message overstates the whole by only the per-message priming.
    assert 0 <= each + tools_share - llm.token_count("scripted", MESSAGES, specs) <= 4 * len(MESSAGES)


def test_a_tool_set_is_tokenised_once_per_process_not_once_per_turn(monkeypatch):
    specs = [tool.spec() for tool in default_tool_registry()][:3]
    calls: list[int] = []
    count = llm.token_count

    def counting(model, messages, tools):
        calls.append(len(tools))
        return count(model, messages, tools)

    monkeypatch.setattr(llm, "token_count", counting)
    monkeypatch.setattr(llm, "_TOOL_SHARES", {})

    first_turn = llm.CachingTokenCounter("scripted")(MESSAGES, specs)
    with_tools = sum(1 for n in calls if n)
    calls.clear()
    second_turn = llm.CachingTokenCounter("scripted")(MESSAGES, specs)

    assert first_turn == second_turn
    assert with_tools == 1
    assert all(n == 0 for n in calls)  # the second turn counted its messages only


texts = st.text(st.characters(codec="utf-8"), max_size=300)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.text(max_size=8),
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {"name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True), "arguments": texts.map(json.dumps)}
            ),
        }
    ),
    min_size=1,
    max_size=3,
)
messages = st.lists(
    st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": texts}),
        st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none(), "tool_calls": tool_calls}),
        st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.text(max_size=8), "content": texts}),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(messages=messages, model=st.sampled_from(["scripted", "gpt-4o", "gpt-3.5-turbo"]))
def test_the_upper_bound_is_never_below_the_count(messages, model):
    # Digits, emoji, combining marks and CJK make more tokens per character than prose does.
    specs = [tool.spec() for tool in default_tool_registry()][:2]
    counter = llm.CachingTokenCounter(model)
    assert counter.upper_bound(messages, specs) >= counter(messages, specs)
