"""Context protection (seed 000, fixes 2 and 6): trimming order and compaction."""

from __future__ import annotations

from typing import Any

from agents.runtime.context import compact_history, fit_context
from agents.runtime.prompt import PromptSection, SystemPrompt

MANDATORY = '<mandatory-skill name="s" version="1">\nFollow me exactly.\n</mandatory-skill>'


def chars(messages: list[dict[str, Any]]) -> int:
    """A transparent token counter: one token per character of content."""
    return sum(len(m.get("content") or "") for m in messages)


def prompt(**sizes: int) -> SystemPrompt:
    sections = [PromptSection("base", "B" * sizes.get("base", 10))]
    if "mandatory" in sizes:
        sections.append(PromptSection("mandatory_skill", MANDATORY))
    sections += [
        PromptSection("skills", "S" * sizes.get("skills", 100)),
        PromptSection("environment", "E" * sizes.get("environment", 50)),
    ]
    return SystemPrompt(tuple(sections))


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "u" * 100},  # 0: history
        {"role": "assistant", "content": "a" * 100},  # 1: history
        {"role": "user", "content": "current question"},  # 2: current user message
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "r" * 100},  # 4: first exchange
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "2", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "2", "content": "latest result"},  # 6: latest exchange
    ]


def fit(system: SystemPrompt, limit: int, messages: list[dict[str, Any]] | None = None):
    return fit_context(
        prompt=system, conversation=messages or conversation(), tail=[], current_user_index=2, limit=limit, count=chars
    )


def test_nothing_is_removed_under_the_limit():
    fitted = fit(prompt(), 10_000)
    assert fitted.removed == []
    assert fitted.messages[1:] == conversation()


def test_a_bound_within_the_limit_spares_the_exact_count_and_one_over_it_does_not_decide():
    exact: list[int] = []

    def counted(messages: list[dict[str, Any]]) -> int:
        exact.append(chars(messages))
        return exact[-1]

    def bound(messages: list[dict[str, Any]]) -> int:
        return 2 * chars(messages)

    size = chars(fit(prompt(), 10_000).messages)
    common = {"prompt": prompt(), "conversation": conversation(), "tail": [], "current_user_index": 2}
    within = fit_context(**common, limit=2 * size, count=counted, bound=bound)
    assert exact == [] and within.removed == []

    over_bound = fit_context(**common, limit=size, count=counted, bound=bound)
    assert exact == [size] and over_bound.removed == [], "the exact count says it fits"


def test_oldest_messages_go_first_and_tool_pairs_go_together():
    total = chars(fit(prompt(), 10_000).messages)

    fitted = fit(prompt(), total - 250)

    roles = [(m["role"], m.get("content")) for m in fitted.conversation]
    assert ("user", "current question") in roles
    assert ("tool", "latest result") in roles
    assert all(
        m["role"] != "tool"
        or any(c.get("tool_calls") and c["tool_calls"][0]["id"] == m["tool_call_id"] for c in fitted.conversation)
        for m in fitted.conversation
    )
    assert [r["role"] for r in fitted.removed] == ["user", "assistant", "assistant", "tool"]
    assert fitted.prompt.names == ["base", "skills", "environment"], "sections stay while messages can go"


def test_low_priority_sections_go_after_messages_skills_list_first():
    total = chars(fit(prompt(), 10_000).messages)
    droppable_messages = 100 + 100 + 100  # two history messages and the first tool result

    fitted = fit(prompt(), total - droppable_messages - 60)

    assert {"kind": "section", "name": "skills"} in fitted.removed
    assert {"kind": "section", "name": "environment"} not in fitted.removed
    assert fitted.prompt.names == ["base", "environment"]


def test_largest_text_is_truncated_last_and_mandatory_block_is_never_touched():
    big = conversation()
    big[2] = {"role": "user", "content": "q" * 5_000}
    system = prompt(mandatory=1, base=300)

    fitted = fit(system, 1_000, big)

    kinds = [r["kind"] for r in fitted.removed]
    assert kinds.index("section") > kinds.index("message")
    assert kinds[-1] == "truncated"
    assert fitted.removed[-1]["target"] == "message 0", "the 5,000-character user message was cut"
    assert MANDATORY in fitted.messages[0]["content"]
    assert chars(fitted.messages) <= 1_000


def test_mandatory_block_current_message_and_latest_exchange_stay_when_the_limit_cannot_be_met():
    fitted = fit(prompt(mandatory=1), 5)

    assert MANDATORY in fitted.messages[0]["content"]
    assert "mandatory_skill" in fitted.prompt.names
    assert [m["role"] for m in fitted.conversation] == ["user", "assistant", "tool"]
    assert fitted.conversation[0]["content"].startswith("current question")
    assert fitted.conversation[2]["tool_call_id"] == "2"


def test_a_compacted_mandatory_block_in_memory_is_not_truncated():
    memory = "Earlier in this conversation (compacted):\n" + "m" * 2_000 + "\n\n" + MANDATORY
    system = SystemPrompt((PromptSection("base", "B" * 10), PromptSection("memory", memory)))

    fitted = fit(system, 500)

    assert fitted.prompt.names == ["base", "memory"]
    assert fitted.prompt.sections[1].text == memory
    assert all(r.get("target") != "section memory" for r in fitted.removed)


def test_compaction_summarises_old_history_and_keeps_mandatory_blocks_verbatim():
    history = [{"role": "user", "content": f"question {i}"} for i in range(25)]
    history[1] = {"role": "assistant", "content": f"Sure.\n{MANDATORY}\nThen more text."}

    summary, kept = compact_history(history, keep_recent=20)

    assert kept == history[5:]
    assert summary is not None
    assert "- user: question 0" in summary and "- user: question 4" in summary
    assert "question 5" not in summary
    assert MANDATORY in summary, "the block survives compaction unchanged"


def test_short_history_is_not_compacted():
    history = [{"role": "user", "content": "hi"}]
    assert compact_history(history, keep_recent=20) == (None, history)
