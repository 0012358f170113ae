"""The rules console in a real headless Chromium: RE2's message while typing a pattern, creating,
disabling and deleting a rule, the tester, an analyst's read-only view, stored XSS in rule fields."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import ForceIncludeRule
from registry.services.rules import rule_create
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=window.__xss=1><script>window.__xss=1</script>"


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


def test_create_a_rule_with_re2s_error_shown_while_typing_then_a_good_pattern(live_server, open_page, author):
    publish("pdf-tools", description="Extract text and tables from PDF files.")
    publish("sql-query", description="Write and explain SQL queries.")
    for number in range(8):  # enough skills for the picker to offer its filter
        publish(f"helper-{number}", description=f"Helper number {number}.")
    page = open_page("ada")
    page.goto(f"{live_server.url}/rules/")
    expect(page.get_by_text("No rules yet")).to_be_visible()
    page.get_by_role("link", name="Create a rule").click()

    page.fill("#id_name", "pdf-questions")
    page.locator("#id_pattern").press_sequentially(r"(pdf)\1", delay=20)
    check = page.locator("#pattern-check")
    expect(check).to_contain_text("RE2 says")
    expect(check).to_contain_text("Backreferences")
    assert page.url.endswith("/rules/new/") and not ForceIncludeRule.objects.exists()
    screenshot(page, "rules-new-re2-error-author")

    page.fill("#id_pattern", "")
    page.locator("#id_pattern").press_sequentially(r"\bpdfs?\b", delay=20)
    page.locator("#id_sample").press_sequentially("Summarise these PDFs", delay=10)
    expect(check).to_contain_text("RE2 compiles this pattern")
    expect(check.locator("mark")).to_have_text("PDFs")
    page.fill("#skill-filter", "pdf")  # the picker filters as you type
    expect(page.locator('.picker-item[data-name="sql-query"]')).to_be_hidden()
    counter = page.locator('[data-picked-count="skill-options"]')
    expect(counter).to_have_text("0 picked")
    page.get_by_label("pdf-tools").check()
    expect(counter).to_have_text("1 picked")
    page.fill("#id_instruction", "Use the pdf-tools skill before answering.")
    page.fill("#id_priority", "10")
    screenshot(page, "rules-new-good-pattern-author")
    page.get_by_role("button", name="Create rule").click()

    expect(page.locator(".flashes")).to_contain_text("Created rule pdf-questions")
    rule = ForceIncludeRule.objects.get()
    assert (rule.pattern, rule.skills, rule.priority) == (r"\bpdfs?\b", ["pdf-tools"], 10)
    expect(page.locator("#pattern-check")).to_contain_text("RE2 compiles")

    page.goto(f"{live_server.url}/rules/")
    expect(page.locator(".rules-table")).to_contain_text("pdf-questions")
    page.get_by_role("button", name="Disable pdf-questions").click()
    expect(page.locator(".flashes")).to_contain_text("Disabled rule pdf-questions")
    screenshot(page, "rules-list-author")
    rule.refresh_from_db()
    assert not rule.enabled

    page.get_by_role("link", name="Edit pdf-questions").click()
    page.get_by_role("button", name="Delete…").click()
    expect(page.locator(".confirm-box")).to_contain_text("Delete the rule “pdf-questions”?")
    assert ForceIncludeRule.objects.exists()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flashes")).to_contain_text("Deleted rule pdf-questions")
    assert not ForceIncludeRule.objects.exists()


def test_test_a_rule_in_the_tester(live_server, open_page, author):
    publish("pdf-tools", description="Extract text and tables from PDF files.")
    publish("sql-query", description="Write and explain SQL queries.")
    rule_create(
        name="pdf-questions",
        pattern=r"\bpdfs?\b",
        skills=["pdf-tools"],
        instruction="Use the pdf-tools skill before answering.",
        auto_invoke={"tool": "run_skill", "arguments": {"skill_name": "pdf-tools", "args": ["{{query}}"]}},
    )
    rule_create(name="sql-help", pattern=r"\bselect\b", skills=["sql-query"], instruction="Explain the query.")
    page = open_page("ada")
    page.goto(f"{live_server.url}/rules/")
    page.get_by_role("link", name="Test a query").click()

    page.locator("#id_query").press_sequentially("Summarise this PDF for me", delay=10)

    result = page.locator("#test-result")
    expect(result.locator(".fired-rule")).to_have_count(1)
    expect(result.locator(".fired-rule .rule-name")).to_have_text("pdf-questions")
    expect(result.locator(".fired-rule")).to_contain_text('/\\bpdfs?\\b/ matched "PDF"')
    expect(result.locator(".instruction").first).to_have_text("Use the pdf-tools skill before answering.")
    expect(result.locator("#prompt-block")).to_contain_text("<available_skills>")
    expect(result.locator("#prompt-block")).to_contain_text("<name>pdf-tools</name>")
    expect(result).to_contain_text('"Summarise this PDF for me"')  # auto_invoke with {{query}} substituted
    assert "query=Summarise" in page.url  # the tested query has its own address
    prompt_block = result.locator("#prompt-block").inner_text()
    assert prompt_block.index("pdf-tools") < prompt_block.index("sql-query")  # the rule lists its skill first
    screenshot(page, "rules-tester-author")


def test_an_analyst_reads_rules_and_tests_queries_but_cannot_write(live_server, open_page):
    user_with_role("alan", "analyst")
    rule = rule_create(name="pdf-questions", pattern=r"\bpdf\b", skills=["pdf-tools"], instruction="Read it.").rule
    page = open_page("alan")

    page.goto(f"{live_server.url}/rules/")
    expect(page.locator(".rules-table")).to_contain_text("pdf-questions")
    expect(page.get_by_role("link", name="New rule")).to_have_count(0)
    expect(page.get_by_role("button", name="Disable pdf-questions")).to_have_count(0)
    screenshot(page, "rules-list-analyst")

    page.goto(f"{live_server.url}/rules/{rule.pk}/")
    expect(page.locator("main")).to_contain_text(r"\bpdf\b")
    expect(page.get_by_role("button", name="Save rule")).to_have_count(0)
    expect(page.get_by_role("button", name="Delete…")).to_have_count(0)
    screenshot(page, "rules-detail-analyst")

    page.goto(f"{live_server.url}/rules/test/?query=a+pdf")
    expect(page.locator(".fired-rule .rule-name")).to_have_text("pdf-questions")
    screenshot(page, "rules-tester-analyst")

    response = page.goto(f"{live_server.url}/rules/new/")
    assert response.status == 403


def test_stored_xss_in_rule_fields_stays_inert(live_server, open_page, author):
    publish("pdf-tools", description=f"PDF tools {XSS}")
    rule = rule_create(
        name=f"x {XSS}"[:100],
        pattern="(?:<script>|pdf)",
        skills=["pdf-tools", "not-yet-published"],
        instruction=f"Do this {XSS}",
        auto_invoke={"tool": "run_skill", "arguments": {XSS: [XSS, "{{query}}"]}},
    ).rule
    page = open_page("ada")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    for path in ("/rules/", f"/rules/{rule.pk}/", f"/rules/test/?query=pdf+{XSS}"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__xss") is None, path
    page.goto(f"{live_server.url}/rules/{rule.pk}/")
    page.get_by_role("button", name="Delete…").click()
    expect(page.locator(".confirm-box")).to_contain_text("<script>")  # shown as text

    page.goto(f"{live_server.url}/rules/test/")
    page.locator("#id_query").press_sequentially(f"pdf {XSS}", delay=2)  # the live fragment too
    expect(page.locator(".instruction").first).to_contain_text("<img src=x onerror=window.__xss=1>")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    screenshot(page, "rules-xss-inert-author")
