"""The playground's trace shows each model call's whole system prompt, whether the event holds it
inline (stored before prompts were stored apart) or references a stored PromptText."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from agents.models import PromptText, TraceEvent
from agents.runtime.types import TurnResult
from agents.turns import services
from agents.turns.trace import DatabaseTraceSink
from tests.agents.turns.test_trace import PROMPT, a_prompted_step
from tests.agents.turns.test_turn_lifecycle import running_turn
from tests.browser.console_helpers import screenshot, user_with_role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_trace_shows_stored_and_inline_prompts_whole(live_server, open_page):
    author = user_with_role("ada", "author")
    claimed = running_turn(lapsed=False, user=author)
    old = {"step": 1, "system_prompt": "An old prompt."}  # stored inline, before prompts were stored apart
    TraceEvent.objects.create(turn=claimed.turn, seq=1, type="llm_call", at=timezone.now(), data=old)
    sink = DatabaseTraceSink(claimed.turn)
    sink.seq = 1
    a_prompted_step(sink, step=2, first_index=0)
    a_prompted_step(sink, step=3, first_index=2)
    assert services.agent_turn_finish(turn=claimed.turn, result=TurnResult(status="succeeded", answer="4"), trace=sink)
    assert PromptText.objects.count() == 1

    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/?turn={claimed.turn.pk}")
    calls = page.locator('.event[data-type="llm_call"]')
    expect(calls).to_have_count(3)
    shown = []
    for n in range(3):
        calls.nth(n).locator("summary").first.click()
        calls.nth(n).locator("details.prompt summary").click()
        shown.append(calls.nth(n).locator("details.prompt pre").text_content())

    assert shown == ["An old prompt.", PROMPT, PROMPT]
    expect(calls.nth(1).locator("details.prompt summary")).to_contain_text(f"({len(PROMPT)} characters)")
    screenshot(page, "playground-trace-stored-prompt-author")
