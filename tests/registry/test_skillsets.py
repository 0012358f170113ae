"""Skillset services below the API: a set label change is all or nothing across its members
(a move and a rollout start alike), and the set's rollout draws one bucket per subject."""

from __future__ import annotations

import pytest

from registry.models import AuditLog, Label, LabelHistory, SkillsetLabel
from registry.selectors.skillsets import served_skillset
from registry.services.label_policies import LabelPolicyUnmet, label_policy_set
from registry.services.skillsets import skillset_label_move, skillset_publish, skillset_rollout_set
from tests.factories import publish
from tests.registry.test_scans import _scanned as scanned

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_set():
    """Set `data` v1 (alpha v1, beta v1) on production, and v2 (alpha v2, beta v2)."""
    for name in ("alpha", "beta"):
        publish(name)
        publish(name, description="Second edition.")
    first, _ = skillset_publish(name="data", members={"alpha": 1, "beta": 1})
    skillset_label_move(skillset=first.skillset, label="production", version_number=1)
    second, _ = skillset_publish(name="data", members={"alpha": 2, "beta": 2})
    return second


def _production(name: str) -> tuple[int, int | None, int]:
    label = Label.objects.select_related("version", "canary_version").get(skill__name=name, name="production")
    return label.version.number, label.canary_number, label.weight


@pytest.mark.parametrize("weight", [None, 40])
def test_one_member_refused_leaves_every_label_as_it_was(data_set, weight):
    label_policy_set(label="production", roles=["author"], require_scan={"max_verdict": "clean"})
    scanned(data_set.members.get(skill_name="alpha").skill_version, "clean")  # alpha passes, beta was never scanned
    history, audit = LabelHistory.objects.count(), AuditLog.objects.count()

    with pytest.raises(LabelPolicyUnmet) as refused:
        if weight is None:
            skillset_label_move(skillset=data_set.skillset, label="production", version_number=2, role="author")
        else:
            skillset_rollout_set(
                skillset=data_set.skillset, label="production", version_number=2, weight=weight, role="author"
            )

    assert refused.value.extra["member"] == "beta" and refused.value.extra["unmet"][0]["check"] == "scan"
    assert (_production("alpha"), _production("beta")) == ((1, None, 0), (1, None, 0))
    label = SkillsetLabel.objects.get(name="production")
    assert (label.version.number, label.canary_version_id, label.weight) == (1, None, 0)
    assert (LabelHistory.objects.count(), AuditLog.objects.count()) == (history, audit)


def test_raising_a_set_rollout_only_moves_subjects_to_the_new_set(data_set):
    skillset_rollout_set(skillset=data_set.skillset, label="production", version_number=2, weight=20)
    subjects = [f"user-{n}" for n in range(300)]
    before = {s for s in subjects if served_skillset("data", "production", subject=s).canary}
    skillset_rollout_set(skillset=data_set.skillset, label="production", version_number=2, weight=60)
    after = {s for s in subjects if served_skillset("data", "production", subject=s).canary}

    assert before < after
    assert (_production("alpha"), _production("beta")) == ((1, 2, 60), (1, 2, 60))
    assert served_skillset("data", "production").version == 1  # no subject: the stable set


def test_a_rollout_leaves_members_without_the_label_alone(data_set):
    publish("gamma")
    third, _ = skillset_publish(name="data", members={"alpha": 2, "beta": 1, "gamma": 1})

    skillset_rollout_set(skillset=third.skillset, label="production", version_number=3, weight=50)

    assert _production("alpha") == (1, 2, 50)
    assert _production("beta") == (1, None, 0)  # already serves its number
    assert not Label.objects.filter(skill__name="gamma").exists()  # no stable side to roll out from
