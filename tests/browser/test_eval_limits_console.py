"""The eval run form in Chromium: it shows what a run costs in agent turns as its fields change,
and a run past EVAL_MAX_ACTIVE_RUNS_PER_USER is refused in place, naming the setting."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import EvalRun
from registry.selectors import skill_get
from registry.services.evals import eval_suite_replace
from tests.agents.evals.eval_runs import SUITE
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def skill():
    publish("code-review", description="Review code and pull requests for bugs and security problems.")
    skill = skill_get(name="code-review")
    eval_suite_replace(skill=skill, document=SUITE)  # 3 cases
    return skill


@pytest.mark.parametrize("role", ["author", "admin"])
def test_the_run_form_shows_the_cost_and_a_refusal_in_place(live_server, open_page, skill, settings, role):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 1
    user_with_role("ada", role)
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/code-review/evals/")
    form = page.locator("form.run-form")
    cost = form.locator("#run-cost")
    expect(cost).to_contain_text("This run costs 3 agent turns: 3 cases × 1 repeat.")

    form.get_by_label("Repeats").fill("4")
    expect(cost).to_contain_text("12 agent turns: 3 cases × 4 repeats.")
    form.get_by_label("Baseline").check()
    expect(cost).to_contain_text("24 agent turns: 3 cases × 4 repeats × 2 with the baseline.")
    form.locator("select[name=model]").select_option("scripted")
    screenshot(page, f"evals-run-cost-{role}")

    form.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-status")).to_be_visible()
    page.go_back()
    page.reload()
    form = page.locator("form.run-form")
    form.get_by_label("Repeats").fill("2")
    form.locator("select[name=model]").select_option("scripted")
    with page.expect_response(lambda answer: answer.request.method == "POST") as answered:
        form.get_by_role("button", name="Start run").click()
    assert answered.value.status == 429
    expect(page.locator("#run-error")).to_contain_text("EVAL_MAX_ACTIVE_RUNS_PER_USER")
    # The form keeps what was asked, with its cost, beside the refusal.
    expect(page.locator("#run-cost")).to_contain_text("6 agent turns: 3 cases × 2 repeats.")
    screenshot(page, f"evals-run-refused-{role}")
    assert EvalRun.objects.count() == 1


def test_an_analyst_sees_no_run_form_and_no_cost(live_server, open_page, skill):
    user_with_role("ann", "analyst")
    page = open_page("ann")
    page.goto(f"{live_server.url}/skills/code-review/evals/")
    expect(page.locator("body")).to_contain_text("Starting a run needs the agent:run scope")
    expect(page.locator("#run-cost")).to_have_count(0)
    screenshot(page, "evals-run-form-analyst")
