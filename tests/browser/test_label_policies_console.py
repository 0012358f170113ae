"""Label policies in a real headless Chromium: an admin protects `production`, sees a move
refused in place with its unmet checks, and overrides it with a reason that the label history
shows; an author is refused in place, sees the checks and the eval run, and cannot override.
Each move, promote and remove button of a protected label shows its gate status before the
click; an author rolls back without new evidence; an admin removes production only with a reason."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import AuditLog, Label, LabelHistory, LabelPolicy
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FAILING_TASK = {"t-pr": True, "t-poem": True, "k-sql": False}


def gated_skill():
    publish("gated", description="First.")
    skill = publish("gated", description="Second.").skill
    eval_suite_replace(skill=skill, document=SUITE)
    return skill, graded_run(skill, outcomes=FAILING_TASK, version=2)


def move_production_to_v2(page, base_url: str) -> None:
    page.goto(f"{base_url}/skills/gated/versions/")
    page.get_by_label("Label", exact=True).fill("production")
    page.get_by_label("Version", exact=True).select_option("2")
    page.get_by_role("button", name="Move label").click()


def test_an_admin_protects_production_and_overrides_a_refusal_with_a_reason(open_page, live_server):
    user_with_role("root", "admin")
    skill, run = gated_skill()
    page = open_page("root")

    page.get_by_role("link", name="Label policies").click()
    page.wait_for_url("**/labels/policies/")  # the policies page has loaded before its form is used
    expect(page.locator(".empty")).to_contain_text("No label is protected yet")
    page.get_by_label("admin").uncheck()
    page.get_by_label("Model").fill("scripted")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-form .field-error")).to_contain_text("non-empty list of roles")
    assert not LabelPolicy.objects.exists()

    page.get_by_label("admin").check()
    page.get_by_label("author").check()
    page.get_by_label("Least task pass rate (0–1)").fill("0.8")
    page.get_by_label("Least trigger F1 (0–1)").fill("0.8")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-production")).to_contain_text("task rate ≥ 0.8")
    policy = LabelPolicy.objects.get(label="production")
    assert policy.roles == ["admin", "author"] and policy.require_eval["min_trigger_f1"] == 0.8
    screenshot(page, "label-policies-admin")

    move_production_to_v2(page, live_server.url)
    refusal = page.locator("#label-refusal")
    expect(refusal).to_contain_text("does not meet the policy of label 'production'")
    expect(refusal.locator("table.unmet-checks")).to_contain_text("min_task_rate")
    assert not Label.objects.filter(skill=skill).exists()

    page.get_by_label("Override: why move it anyway?").fill("Hotfix for the outage; evals follow.")
    page.get_by_role("button", name="Override and move production to v2").click()
    expect(page.locator(".flash-success")).to_contain_text("to v2")
    assert Label.objects.get(skill=skill, name="production").version.number == 2
    override = page.locator("tr.history-override")
    expect(override).to_contain_text("Hotfix for the outage; evals follow.")
    expect(override).to_contain_text("min_task_rate")
    expect(override.get_by_role("link", name="run")).to_have_attribute("href", f"/evals/runs/{run.pk}/")
    assert AuditLog.objects.filter(action="label.override", via="console").exists()
    screenshot(page, "label-policy-override")


def test_an_author_is_refused_in_place_sees_the_checks_and_cannot_override(open_page, live_server):
    user_with_role("ada", "author")
    skill, run = gated_skill()
    label_policy_set(
        label="production",
        roles=["admin", "author"],
        require_eval={"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8},
    )
    label_policy_set(label="staging", roles=["admin"])
    page = open_page("ada")
    expect(page.get_by_role("link", name="Label policies")).to_have_count(0)

    move_production_to_v2(page, live_server.url)
    refusal = page.locator("#label-refusal")
    expect(refusal.locator("table.unmet-checks")).to_contain_text("min_task_rate")
    expect(refusal.get_by_role("link", name=f"run {str(run.pk)[:8]}")).to_have_attribute(
        "href", f"/evals/runs/{run.pk}/"
    )
    expect(page.get_by_label("Override: why move it anyway?")).to_have_count(0)
    screenshot(page, "label-policy-refused-author")

    refusal.get_by_role("link", name=f"run {str(run.pk)[:8]}").click()
    expect(page).to_have_url(f"{live_server.url}/evals/runs/{run.pk}/")

    page.goto(f"{live_server.url}/skills/gated/versions/")
    page.get_by_label("Label", exact=True).fill("staging")
    page.get_by_role("button", name="Move label").click()
    expect(page.locator("#label-refusal")).to_contain_text("lets only admin change it")
    assert not LabelHistory.objects.filter(skill=skill).exists()
    assert page.goto(f"{live_server.url}/labels/policies/").status == 200  # readable, not editable
    expect(page.get_by_role("button", name="Save policy")).to_have_count(0)


def test_an_author_reading_the_policies_is_told_who_changes_them(open_page, live_server):
    user_with_role("ada", "author")
    label_policy_set(label="production", roles=["admin"])
    page = open_page("ada")
    page.goto(f"{live_server.url}/labels/policies/")
    expect(page.get_by_role("button", name="Save policy")).to_have_count(0)
    expect(page.locator("#policy-readonly")).to_contain_text("does not change them: an admin does")
    screenshot(page, "label-policies-author")


PASSING = {"t-pr": True, "t-poem": True, "k-sql": True}


def gated_skill_in_production():
    """gated v1-v4 under an eval-gated production policy: production served v1, now v2; v3's run
    fails the gate, v4's passes."""
    skill, _ = gated_skill()
    publish("gated", description="Third.")
    publish("gated", description="Fourth.")
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="production", version_number=2)
    graded_run(skill, outcomes=FAILING_TASK, version=3)
    graded_run(skill, outcomes=PASSING, version=4)
    label_policy_set(
        label="production", roles=["admin", "author"], require_eval={"model": "scripted", "min_task_rate": 0.8}
    )
    return skill


def version_row(page, number: int):
    return page.locator("tbody tr").filter(has=page.get_by_role("link", name=f"v{number}", exact=True))


def test_an_author_sees_each_buttons_gate_before_the_click_and_rolls_back(open_page, live_server):
    user_with_role("ada", "author")
    skill = gated_skill_in_production()
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/gated/versions/")

    rollback = version_row(page, 1).locator(".gate")
    expect(rollback).to_have_attribute("data-gate", "allowed")
    expect(rollback).to_contain_text("rollback: served within 7d, no new evidence needed")
    needs = version_row(page, 3).locator(".gate")
    expect(needs).to_have_attribute("data-gate", "needs_evidence")
    expect(needs).to_contain_text("needs evidence")
    expect(needs).to_contain_text("task pass rate ≥ 0.8 (its run has 0)")
    expect(version_row(page, 3).get_by_role("button", name="Promote v3 to production")).to_be_disabled()
    expect(version_row(page, 4).locator(".gate")).to_have_attribute("data-gate", "allowed")
    remove = page.locator("#remove-gate-production")
    expect(remove).to_contain_text("admin override only")
    expect(remove).to_contain_text("a version no eval run with scripted vouches for")
    expect(page.get_by_role("button", name="Remove label production")).to_be_disabled()
    page.get_by_label("Label", exact=True).fill("production")
    page.get_by_label("Version", exact=True).select_option("3")
    expect(page.locator("#move-gate .gate")).to_have_attribute("data-gate", "needs_evidence")
    page.get_by_label("Version", exact=True).select_option("1")
    expect(page.locator("#move-gate .gate")).to_contain_text("rollback")
    screenshot(page, "label-gates-author")
    page.get_by_label("Label", exact=True).fill("staging")
    expect(page.locator("#move-gate .gate")).to_have_count(0)  # unprotected: nothing to say

    version_row(page, 1).get_by_role("button", name="Move production back to v1").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator(".flash-success")).to_contain_text("to v1")
    assert Label.objects.get(skill=skill, name="production").version.number == 1
    expect(page.locator("tr.history-rollback").first).to_contain_text("v2 → v1")
    assert LabelHistory.objects.filter(skill=skill).first().kind == "rollback"
    screenshot(page, "label-rollback-history")


def test_an_admin_is_refused_removing_production_and_removes_it_with_a_reason(open_page, live_server):
    user_with_role("root", "admin")
    skill = gated_skill_in_production()
    page = open_page("root")
    page.goto(f"{live_server.url}/skills/gated/versions/")
    expect(page.locator("#remove-gate-production")).to_contain_text("admin override only")

    page.get_by_role("button", name="Remove label production").click()
    refusal = page.locator("#label-refusal")
    expect(refusal).to_contain_text("not removed")
    expect(refusal).to_contain_text("Removing label 'production' of gated does not meet its policy (removal)")
    assert Label.objects.filter(skill=skill, name="production").exists()
    screenshot(page, "label-remove-refused-admin")

    page.get_by_label("Override: why remove it anyway?").fill("Retiring gated; agents should stop getting it.")
    page.get_by_role("button", name="Override and remove production").click()
    expect(page.locator(".flash-success")).to_contain_text("Removed label production")
    assert not Label.objects.filter(skill=skill, name="production").exists()
    override = page.locator("tr.history-override").first
    expect(override).to_contain_text("Retiring gated; agents should stop getting it.")
    expect(override).to_contain_text("removal")
    screenshot(page, "label-remove-override")


def test_an_analyst_sees_no_gates_and_the_policy_form_names_a_bad_model_or_window(open_page, live_server):
    user_with_role("ana", "analyst")
    user_with_role("root", "admin")
    gated_skill_in_production()
    page = open_page("ana")
    page.goto(f"{live_server.url}/skills/gated/versions/")
    expect(page.locator(".gate")).to_have_count(0)
    screenshot(page, "label-gates-analyst")

    page = open_page("root")
    page.goto(f"{live_server.url}/labels/policies/?edit=production")
    expect(page.get_by_label("Rollback window")).to_have_value("7d")
    page.get_by_label("Model").fill("gpt-9-imaginary")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-model ~ .field-error")).to_contain_text("one of offline, scripted")
    expect(page.get_by_label("Model")).to_have_attribute("aria-invalid", "true")
    screenshot(page, "label-policy-bad-model")
    page.get_by_label("Model").fill("scripted")
    page.get_by_label("Rollback window").fill("a fortnight")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-rollback-window ~ .field-error")).to_contain_text("a duration from 0 to 365 days")
    assert LabelPolicy.objects.get(label="production").require_eval["model"] == "scripted"

    page.get_by_label("Model").fill("scripted")
    page.get_by_label("Rollback window").fill("36h")
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-production .rollback-window")).to_have_text("36h")
    assert LabelPolicy.objects.get(label="production").rollback_window.total_seconds() == 36 * 3600
    screenshot(page, "label-policies-rollback-window")
