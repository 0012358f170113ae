"""Label policy services below the API: who is exempt, what the history accepts, which role acts."""

from __future__ import annotations

import pytest

from registry.models import LabelHistory
from registry.roles import acting_role
from registry.services.audit import Actor
from registry.services.label_policies import LabelPolicyUnmet, label_history_record, label_policy_set
from registry.services.labels import label_move
from tests.factories import publish

pytestmark = pytest.mark.django_db

GATE = {"model": "scripted", "min_task_rate": 0.8}


@pytest.fixture
def skill():
    publish("policed")
    return publish("policed", description="Second.").skill


def test_the_operator_moves_a_protected_label_without_a_role(skill):
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    with pytest.raises(LabelPolicyUnmet):
        label_move(skill=skill, label="production", version_number=2, role="admin")
    label_move(skill=skill, label="production", version_number=2)  # the CLI: `skills label`
    assert LabelHistory.objects.get().kind == "move"


def test_an_unchecked_override_is_a_plain_move(skill):
    label_policy_set(label="production", roles=["admin"])
    label_move(skill=skill, label="production", version_number=2, role="admin", override_reason="not needed")
    row = LabelHistory.objects.get()
    assert (row.kind, row.reason, row.unmet) == ("move", "", None)


def test_the_history_takes_only_known_kinds_and_percentages(skill):
    label_history_record(
        skill=skill,
        label="production",
        kind="rollout_step",
        from_version=1,
        to_version=2,
        weight=25,
        actor=Actor(via="system"),
    )
    assert LabelHistory.objects.get().weight == 25
    with pytest.raises(ValueError):
        label_history_record(skill=skill, label="production", kind="teleport", from_version=1, to_version=2)
    with pytest.raises(ValueError):
        label_history_record(
            skill=skill, label="production", kind="rollout_step", from_version=1, to_version=2, weight=101
        )


@pytest.mark.parametrize(
    ("roles", "acting"),
    [({"analyst", "admin"}, "admin"), ({"analyst", "author"}, "author"), ({"analyst"}, "analyst"), (set(), "")],
)
def test_a_principal_acts_with_its_strongest_role(roles, acting):
    assert acting_role(roles) == acting
