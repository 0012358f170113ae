"""The evals console in a real headless Chromium against the live server and a real Celery worker:
an author edits a suite in its table (add, edit, a problem shown in its row, delete), imports an
evals.json, starts a run with the scripted model and watches it fill in live until it ends, opens
a case's trace, runs again and compares the two runs; an analyst reads all of it and changes nothing."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from registry.models import EvalRun, EvalRunStatus
from registry.selectors import skill_get
from registry.selectors.evals import eval_suite_revision
from registry.services.evals import eval_suite_replace
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

READ_SKILL = {"tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "code-review"}}]}
IMPORTED = {
    "cases": [
        {
            "id": "t-pr",
            "kind": "trigger",
            "query": "review this pull request for security",
            "should_trigger": True,
            "script": [READ_SKILL, {"content": "Reviewed."}],
        },
        {
            "id": "t-poem",
            "kind": "trigger",
            "query": "write me a haiku",
            "should_trigger": False,
            "script": [{"content": "Leaves fall."}],
        },
        {
            "id": "k-sql",
            "kind": "task",
            "prompt": "Review app.py for SQL injection",
            "expect": [{"skill_loaded": "code-review"}, {"answer_matches": "(?i)parameteri[sz]ed"}],
            "script": [READ_SKILL, {"content": "Use parameterized queries at line 3."}],
        },
    ]
}


@pytest.fixture
def skill():
    publish("code-review", description="Review code and pull requests for bugs and security problems.")
    return skill_get(name="code-review")


def test_an_author_edits_a_suite_runs_it_live_and_compares_two_runs(live_server, open_page, worker, skill, tmp_path):
    user_with_role("ada", "author")
    page = open_page("ada")
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{live_server.url}/skills/code-review/")
    page.get_by_role("link", name="Evals", exact=True).click()
    expect(page.locator("#suite")).to_contain_text("No eval cases yet")
    page.evaluate("window.__samePage = true")

    # Add a trigger case in the table's row form.
    page.get_by_role("link", name="Add trigger case").click()
    row = page.locator("#add-case")
    row.get_by_label("Id").fill("t-haiku")
    row.get_by_label("Query").fill("write a haiku about autumn")
    row.get_by_label("Should load the skill").uncheck()
    expect(row.get_by_label("Prompt")).to_be_hidden()  # a trigger case has no prompt
    row.get_by_role("button", name="Add case").click()
    expect(page.locator(".saved")).to_have_text("Added case t-haiku: suite revision 1.")
    expect(page.locator('tr[data-case="t-haiku"]')).to_contain_text("should not trigger")

    # Edit it: a task case whose checks are not JSON comes back in its row, naming the field.
    page.get_by_role("link", name="Edit t-haiku").click()
    edited = page.locator("#case-t-haiku")
    edited.get_by_label("Kind").select_option("task")
    edited.get_by_label("Prompt").fill("Review app.py")
    edited.get_by_label("Expect").fill('[{"skill_loaded": ')
    edited.get_by_role("button", name="Save case").click()
    expect(page.locator('#case-t-haiku [data-field="expect"]')).to_be_visible()
    expect(page.locator("#case-t-haiku textarea[name=expect]")).to_have_attribute("aria-invalid", "true")
    screenshot(page, "evals-suite-problem-in-place-author")
    page.locator("#case-t-haiku").get_by_label("Expect").fill('[{"skill_loaded": "code-review"}]')
    page.locator("#case-t-haiku").get_by_role("button", name="Save case").click()
    expect(page.locator(".saved")).to_have_text("Changed case t-haiku: suite revision 2.")
    page.get_by_role("button", name="Delete t-haiku").click()
    expect(page.locator(".saved")).to_have_text("Deleted case t-haiku: suite revision 3.")
    assert page.evaluate("window.__samePage") is True, "the table is edited in place"

    # Import an evals.json (ours): the suite is replaced.
    upload = tmp_path / "evals.json"
    upload.write_text(json.dumps(IMPORTED))
    page.set_input_files("#id_evals_file", str(upload))
    page.get_by_role("button", name="Import: replace the suite").click()
    expect(page.locator(".flashes")).to_contain_text("Imported 3 cases from evals.json: suite revision 4.")
    expect(page.locator("table.cases tbody#case-rows tr")).to_have_count(3)
    assert [case["id"] for case in eval_suite_revision(skill=skill).cases] == ["t-pr", "t-poem", "k-sql"]
    screenshot(page, "evals-suite-author")

    # Run it with the scripted model and watch it fill in.
    page.select_option("#id_run_model", "scripted")
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-status")).to_be_visible()
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=120_000)
    expect(page.locator("#run-done")).to_have_text("3")
    assert page.locator("#run-live[hx-trigger]").count() == 0  # polling has stopped
    expect(page.locator("#run-summary [data-figure=task] .figure")).to_contain_text("100%")
    expect(page.locator("#run-summary [data-figure=trigger] .figure")).to_contain_text("1.00")
    screenshot(page, "evals-run-author")
    first = EvalRun.objects.get()
    assert first.status == EvalRunStatus.SUCCEEDED

    # A case's trace.
    page.locator('tr[data-case="k-sql"] a.trace-link').click()
    expect(page.locator("h1")).to_contain_text("Turn")
    expect(page.locator("body")).to_contain_text("Use parameterized queries at line 3.")

    # A second run, then the two side by side.
    page.goto(f"{live_server.url}/skills/code-review/evals/")
    page.select_option("#id_run_model", "scripted")
    page.get_by_label("Repeats").fill("2")
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=120_000)
    expect(page.locator("#run-done")).to_have_text("6")
    page.get_by_role("link", name="Compare with the run before").click()
    expect(page.locator("[data-figure=difference] .figure")).to_have_text("0%")
    expect(page.locator("#flipped")).to_contain_text("No case changed its outcome")
    screenshot(page, "evals-compare-author")


def test_an_analyst_reads_the_suite_and_the_runs_but_edits_and_runs_nothing(live_server, open_page, skill):
    eval_suite_replace(skill=skill, document=SUITE)
    a = graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": False})
    b = graded_run(skill, outcomes={"t-pr": False, "t-poem": True, "k-sql": True})
    user_with_role("ann", "analyst")
    page = open_page("ann")
    page.goto(f"{live_server.url}/skills/code-review/evals/")
    expect(page.locator('tr[data-case="k-sql"]')).to_be_visible()
    expect(page.get_by_role("link", name="Add trigger case")).to_have_count(0)
    expect(page.get_by_role("button", name="Start run")).to_have_count(0)
    expect(page.locator("body")).to_contain_text("Starting a run needs the agent:run scope")
    screenshot(page, "evals-suite-analyst")

    page.get_by_role("button", name="Compare A with B").click()
    expect(page.locator("[data-figure=difference] .figure")).to_have_text("+100%")
    expect(page.locator('#flipped tr[data-case="t-pr"]')).to_be_visible()
    expect(page.locator('#flipped tr[data-case="k-sql"]')).to_be_visible()
    screenshot(page, "evals-compare-analyst")
    assert str(b.pk) in page.url and str(a.pk) in page.url

    page.goto(f"{live_server.url}/evals/runs/{b.pk}/")
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    screenshot(page, "evals-run-analyst")
    page.goto(f"{live_server.url}/skills/code-review/")
    expect(page.locator("#version-evals")).to_contain_text("task 100%")
    screenshot(page, "evals-skill-page-analyst")


def test_a_playground_turn_is_saved_as_an_eval_case(live_server, open_page, worker, skill):
    user_with_role("ada", "author")
    page = open_page("ada")
    page.goto(f"{live_server.url}/playground/")
    page.fill("textarea[name=message]", "Review this pull request for security problems")
    page.select_option("#id_model", "offline")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#turn-status")).to_have_text("succeeded", timeout=120_000)
    page.get_by_text("Save as eval case").click()
    expect(page.get_by_label("Skill", exact=True)).to_have_value("code-review")  # the skill the turn loaded
    page.get_by_label("As", exact=True).select_option("trigger")
    page.get_by_role("button", name="Add to the suite").click()

    expect(page.locator(".flashes")).to_contain_text("Saved as trigger case t-review-this-pull-request")
    form = page.locator("#case-t-review-this-pull-request")
    expect(form.get_by_label("Query")).to_have_value("Review this pull request for security problems")
    expect(form.get_by_label("Should load the skill")).to_be_checked()
    screenshot(page, "evals-saved-from-playground-author")
    assert eval_suite_revision(skill=skill).cases == [
        {
            "id": "t-review-this-pull-request",
            "kind": "trigger",
            "query": "Review this pull request for security problems",
            "should_trigger": True,
        }
    ]
