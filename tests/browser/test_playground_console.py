"""The playground in a real headless Chromium against the live server and a real Celery worker:
a turn with the offline model whose trace arrives live, continuing the conversation, feedback,
an analyst who cannot run turns, and stored XSS in trace data."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from agents.models import AgentTurn, TraceEvent, TurnStatus
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=window.__xss=1><script>window.__xss=1</script>"


def test_an_offline_turn_whose_trace_arrives_live(live_server, open_page, worker):
    user_with_role("ada", "author")
    publish(
        "pdf-tools",
        description="Extract text and tables from PDF files.",
        body="# PDF tools\n\n1. Open the PDF.\n2. Extract the tables.\n",
    )
    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/")
    page.evaluate("window.__samePage = true")  # gone if anything reloads the page

    page.fill("textarea[name=message]", "Extract the tables from this PDF")
    page.select_option("#id_model", "offline")
    page.get_by_role("button", name="Send").click()

    trace = page.locator("#trace-events")
    expect(page.locator("#turn-status")).to_be_visible()
    expect(trace.locator('.event[data-type="llm_call"]').first).to_be_visible(timeout=60_000)
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    assert page.evaluate("window.__samePage") is True, "the trace must arrive without a reload"
    types = trace.locator(".event-type").all_inner_texts()
    assert types[0] == "llm_call" and "tool_call" in types and "skill_activated" in types, types
    turn = AgentTurn.objects.get()
    assert "?turn=" in page.url and str(turn.pk) in page.url
    assert len(types) == TraceEvent.objects.filter(turn=turn).count()  # each event once, in order
    expect(page.locator("#turn-answer")).to_contain_text("Offline demo model")
    expect(page.locator("#turn-answer li")).to_have_text(["Open the PDF.", "Extract the tables."])  # Markdown
    expect(page.locator("#turn-totals")).to_contain_text("tokens")
    assert page.locator("#turn-poller[hx-trigger]").count() == 0  # polling has stopped

    page.locator('.event[data-type="llm_call"] summary').first.click()
    llm_call = page.locator('.event[data-type="llm_call"]').first
    expect(llm_call.locator(".names.sections")).to_be_visible()
    llm_call.locator("details.prompt summary").click()
    expect(llm_call.locator("details.prompt pre")).to_contain_text("## Skills (mandatory)")
    page.locator('.event[data-type="tool_call"] summary').first.click()
    expect(page.locator('.event[data-type="tool_call"]').first).to_contain_text("read_skill")
    screenshot(page, "playground-offline-turn-author")

    page.get_by_role("button", name="✓ Good").click()
    expect(page.locator("#turn-feedback")).to_contain_text("Thanks")
    turn.refresh_from_db()
    assert turn.feedback_rating == 1

    # The next message continues the conversation (the form now points at it).
    page.fill("textarea[name=message]", "/pdf-tools and now the second page")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".earlier")).to_contain_text("Extract the tables from this PDF")
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=60_000)
    second = AgentTurn.objects.exclude(pk=turn.pk).get()
    assert second.conversation_id == turn.conversation_id and second.status == TurnStatus.SUCCEEDED
    expect(page.locator('.event[data-type="skill_activated"]').first).to_contain_text("forced")
    screenshot(page, "playground-conversation-author")


def test_an_analyst_sees_the_playground_but_cannot_run_turns(live_server, open_page):
    user_with_role("alan", "analyst")
    page = open_page("alan")

    page.goto(f"{live_server.url}/playground/")

    expect(page.locator("main")).to_contain_text("Your role can't run turns")
    expect(page.get_by_role("button", name="Send")).to_have_count(0)
    screenshot(page, "playground-analyst")


def test_stored_xss_in_trace_data_stays_inert(live_server, open_page):
    author = user_with_role("ada", "author")
    turn = AgentTurn.objects.create(
        user=author,
        message=f"hello {XSS}",
        model="offline",
        status=TurnStatus.SUCCEEDED,
        answer=f"The answer {XSS}",
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    events = [
        ("rule_fired", {"name": XSS, "why": XSS, "instruction": XSS}),
        (
            "llm_call",
            {
                "step": 1,
                "model": XSS,
                "system_prompt": XSS,
                "sections": [XSS],
                "tools": [XSS],
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "cost": 0,
                "latency_ms": 1,
                "content": XSS,
            },
        ),
        ("tool_call", {"step": 1, "tool": XSS, "arguments": {XSS: XSS}, "ok": False, "result": XSS}),
        ("tool_refused", {"step": 2, "tool": XSS, "skill": XSS, "allowed": [XSS]}),
        (XSS[:32], {"data": XSS}),
    ]
    for seq, (kind, data) in enumerate(events, start=1):
        TraceEvent.objects.create(turn=turn, seq=seq, type=kind, at=timezone.now(), data=data)
    page = open_page("ada")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(f"{live_server.url}/playground/?turn={turn.pk}")
    for summary in page.locator(".event > details > summary").all():
        summary.click()
    page.locator("details.prompt summary").click()

    expect(page.locator("#turn-answer")).to_contain_text("<script>window.__xss=1</script>")  # shown as text
    expect(page.locator('.event[data-type="tool_call"]')).to_contain_text("<img src=x onerror=window.__xss=1>")
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    screenshot(page, "playground-xss-inert-author")


def test_a_send_the_server_cannot_take_says_why_instead_of_doing_nothing(live_server, open_page):
    # The server's 503 for a broker outage is covered with real processes in
    # tests/faults/test_redis_outage.py; here the browser gets that answer and must show it.
    user_with_role("ada", "author")
    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/")
    outage = "The task broker is unavailable right now; try again shortly."
    page.route(
        "**/playground/",
        lambda route: route.fulfill(status=503, content_type="text/plain", body=outage)
        if route.request.method == "POST"
        else route.continue_(),
    )

    page.fill("textarea[name=message]", "hello")
    page.get_by_role("button", name="Send").click()

    problem = page.locator("#request-problem")
    expect(problem).to_be_visible()
    expect(problem).to_have_text(outage)
    expect(page.locator("textarea[name=message]")).to_have_value("hello")  # nothing typed is lost
    screenshot(page, "playground-503")

    page.unroute("**/playground/")
    page.select_option("#id_model", "offline")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#turn-status")).to_be_visible()
    expect(problem).to_be_hidden()  # the same control was tried again, and worked
