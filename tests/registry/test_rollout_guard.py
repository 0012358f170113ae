"""The rollout guard (Celery beat's `label_rollouts_guard_task`): with a label policy's `guard`,
a canary whose live outcomes (posted through `POST /usage`) are worse than stable's with
P ≥ `p_worse` and at least `min_n` outcomes on each side is rolled back to weight 0, as the
system, with the figures; an equal canary, or too few outcomes, is left alone; it never
promotes."""

from __future__ import annotations

import itertools

import pytest

from config.celery import app
from registry.models import AuditLog, Label, LabelHistory, WebhookDelivery
from registry.readmodel.served import skill_served
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from registry.services.webhooks import webhook_create
from registry.tasks import label_rollouts_guard_task
from tests.factories import publish

pytestmark = pytest.mark.django_db

GUARD = {"min_n": 50, "p_worse": 0.95}
_ids = itertools.count()


@pytest.fixture
def rollout(settings):
    """`guarded` v1 on production with v2 as a 50% canary, under a policy with a guard, and a
    webhook that wants `label.rolled_back`."""
    publish("guarded", description="Stable.")
    skill = publish("guarded", description="Canary.").skill
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin", "author"], guard=GUARD)
    label_rollout_set(skill=skill, label="production", version_number=2, weight=50)
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url="http://127.0.0.1:9/hook", events=["label.rolled_back"])
    return Label.objects.get(skill=skill, name="production")


def outcomes(api, version: int, succeeded: int, failed: int) -> None:
    events = [
        {"event_id": f"guard-{next(_ids)}", "kind": kind, "skill": "guarded", "version": version}
        for kind, count in (("succeeded", succeeded), ("failed", failed))
        for _ in range(count)
    ]
    response = api.post("/api/v1/usage", {"events": events}, format="json")
    assert response.status_code == 200, response.content


def test_a_worse_canary_is_rolled_back_as_the_system_with_the_figures(api, rollout):
    outcomes(api, 1, succeeded=48, failed=12)  # 80%
    outcomes(api, 2, succeeded=27, failed=33)  # 45%

    assert label_rollouts_guard_task() == [rollout.pk]

    label = Label.objects.get(pk=rollout.pk)
    assert label.weight == 0 and label.version.number == 1  # never promoted, canary kept for its figures
    assert label.canary_version.number == 2 and label.rolled_back_at is not None
    figures = label.rollback_figures
    assert figures["stable"]["n"] == 60 and figures["canary"]["n"] == 60 and figures["p_worse"] >= 0.95
    audit = AuditLog.objects.get(action="label.rolled_back")
    assert audit.actor is None and audit.via == "system" and audit.after["figures"]["p_worse"] == figures["p_worse"]
    history = LabelHistory.objects.get(kind="rollback")
    assert (history.from_version, history.to_version, history.weight) == (1, 2, 0)
    assert "P(canary worse)" in history.reason
    assert WebhookDelivery.objects.filter(event="label.rolled_back").count() == 1
    assert {skill_served(name="guarded", subject=f"s{n}").version for n in range(40)} == {1}
    assert label_rollouts_guard_task() == []  # no longer active: nothing more to do

    # Sending traffic to the canary again is someone's decision: the rollback is no longer news.
    label_rollout_set(skill=label.skill, label="production", version_number=2, weight=5)
    assert Label.objects.get(pk=rollout.pk).rolled_back_at is None


def test_an_equal_canary_is_left_alone(api, rollout):
    outcomes(api, 1, succeeded=45, failed=15)
    outcomes(api, 2, succeeded=45, failed=15)

    assert label_rollouts_guard_task() == []

    label = Label.objects.get(pk=rollout.pk)
    assert label.weight == 50 and label.rolled_back_at is None
    assert not LabelHistory.objects.filter(kind="rollback").exists()
    assert not WebhookDelivery.objects.exists()


def test_too_few_outcomes_on_a_side_is_not_enough_evidence(api, rollout):
    outcomes(api, 1, succeeded=48, failed=12)
    outcomes(api, 2, succeeded=5, failed=40)  # clearly worse, but n = 45 < min_n

    assert label_rollouts_guard_task() == []
    assert Label.objects.get(pk=rollout.pk).weight == 50

    outcomes(api, 2, succeeded=0, failed=5)  # now 50 on each side
    assert label_rollouts_guard_task() == [rollout.pk]


def test_a_better_canary_is_never_promoted(api, rollout):
    outcomes(api, 1, succeeded=20, failed=40)
    outcomes(api, 2, succeeded=58, failed=2)

    assert label_rollouts_guard_task() == []
    label = Label.objects.get(pk=rollout.pk)
    assert label.version.number == 1 and label.weight == 50


def test_without_a_guard_nothing_is_checked(api, rollout):
    label_policy_set(label="production", roles=["admin", "author"], guard=None)
    outcomes(api, 1, succeeded=48, failed=12)
    outcomes(api, 2, succeeded=2, failed=58)

    assert label_rollouts_guard_task() == []
    assert Label.objects.get(pk=rollout.pk).weight == 50


def test_beat_schedules_the_guard_task(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["rollout-guard"]
    assert app.tasks[entry["task"]].run is label_rollouts_guard_task.run
    assert entry["schedule"] == settings.ROLLOUT_GUARD_SECONDS > 0
