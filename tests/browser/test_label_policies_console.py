"""Label policies in a real headless Chromium: an admin protects `production`, sees a move
refused in place with its unmet checks, and overrides it with a reason that the label history
shows; an author is refused in place, sees the checks and the eval run, and cannot override."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import AuditLog, Label, LabelHistory, LabelPolicy
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
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
