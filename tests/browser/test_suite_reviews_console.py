"""Suite revisions as evidence in a real headless Chromium: an author outside the production
policy's roles deletes a case, so their suite change is a proposal (the suite page
says so, and that only an admin may accept it); an admin's move is refused in place naming the
revision, the admin accepts it from the suite page, the move then goes through, and the label
history shows the proposal and the acceptance beside the move. An analyst reads it all."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import EvalSuiteRevision, Label
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.browser.console_helpers import screenshot, user_with_role
from tests.browser.test_label_policies_console import FAILING_TASK, move_production_to_v2
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_author_s_suite_change_waits_for_an_admin_to_accept_it_before_it_moves_production(open_page, live_server):
    user_with_role("ada", "author")
    user_with_role("root", "admin")
    user_with_role("ann", "analyst")
    publish("gated", description="First.")
    skill = publish("gated", description="Second.").skill
    eval_suite_replace(skill=skill, document=SUITE)  # the strict suite, by the operator
    graded_run(skill, outcomes=FAILING_TASK, version=2)
    label_policy_set(label="production", roles=["admin"], require_eval={"model": "scripted", "min_task_rate": 0.8})

    # The author deletes a case: a proposal, said on the suite page.
    author = open_page("ada")
    author.on("dialog", lambda dialog: dialog.accept())
    author.goto(f"{live_server.url}/skills/gated/evals/")
    author.get_by_role("button", name="Delete t-poem").click()
    expect(author.locator(".saved")).to_have_text("Deleted case t-poem: suite revision 2.")
    author.goto(f"{live_server.url}/skills/gated/evals/")
    review = author.locator("#suite-review")
    expect(review).to_contain_text("Revision 2 is a proposal by ada")
    expect(review).to_contain_text("revision 1 for now")
    expect(review).to_contain_text("Only admin may accept it.")
    expect(review.get_by_role("button", name="Accept revision 2")).to_have_count(0)
    screenshot(author, "suite-proposal-author")

    # v2 passes a run of it, but the gate does not count it.
    easy = graded_run(skill, outcomes={"t-pr": True, "k-sql": True}, version=2)
    assert easy.suite_revision.number == 2
    admin = open_page("root")
    move_production_to_v2(admin, live_server.url)
    refusal = admin.locator("#label-refusal")
    expect(refusal).to_contain_text("suite revision 2 was not accepted")
    expect(refusal.locator("table.unmet-checks")).to_contain_text("suite_accepted")
    assert not Label.objects.filter(skill=skill).exists()
    screenshot(admin, "suite-proposal-refused-admin")

    refusal.get_by_role("link", name="review the proposal").click()
    expect(admin.locator("#suite-review")).to_contain_text("Revision 2 is a proposal by ada")
    screenshot(admin, "suite-proposal-admin")
    admin.get_by_role("button", name="Accept revision 2").click()
    expect(admin.locator(".flash-success")).to_contain_text("Accepted suite revision 2")
    expect(admin.locator("#suite-review")).to_have_count(0)
    assert EvalSuiteRevision.objects.get(number=2).accepted_by.username == "root"

    move_production_to_v2(admin, live_server.url)
    admin.get_by_role("button", name="Confirm").click()
    expect(admin.locator(".flash-success")).to_contain_text("to v2")
    assert Label.objects.get(skill=skill, name="production").version.number == 2
    expect(admin.locator("tr.history-suite_accept")).to_contain_text("accepted revision 2")
    expect(admin.locator("tr.history-suite_accept")).to_contain_text("root")
    expect(admin.locator("tr.history-suite_proposal")).to_contain_text("proposed revision 2")
    expect(admin.locator("tr.history-suite_proposal")).to_contain_text("ada")
    screenshot(admin, "suite-history-admin")

    analyst = open_page("ann")
    analyst.goto(f"{live_server.url}/skills/gated/versions/")
    expect(analyst.locator("tr.history-suite_proposal")).to_contain_text("ada")
    analyst.goto(f"{live_server.url}/skills/gated/evals/")
    expect(analyst.locator("table.runs")).to_contain_text("rev 2")
    screenshot(analyst, "suite-runs-analyst")
