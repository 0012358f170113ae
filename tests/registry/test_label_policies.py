"""Label policy services below the API: who is exempt, what the history accepts, which role acts,
and the gate status (`label_gate`) the console shows beside each button and the services enforce."""

from __future__ import annotations

import pytest

from registry.models import LabelHistory
from registry.roles import acting_role
from registry.services.audit import Actor
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import (
    LabelPolicyForbidden,
    LabelPolicyUnmet,
    label_gate,
    label_history_record,
    label_policy_enforce,
    label_policy_set,
)
from registry.services.labels import label_move
from tests.agents.evals.eval_runs import SUITE, graded_run
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


def gate_of(skill, version: int | None, role: str):
    target = skill.versions.get(number=version) if version else None
    return label_gate(skill=skill, label="production", version=target, role=role)


def test_the_gate_says_allowed_needs_evidence_or_admin_override_only(skill):
    eval_suite_replace(skill=skill, document=SUITE)
    assert gate_of(skill, 2, "author").status == "allowed"  # no policy yet
    label_policy_set(label="production", roles=["admin", "author"], require_eval={**GATE, "min_trigger_f1": 0.5})

    needs = gate_of(skill, 2, "author")
    assert (needs.status, needs.title) == ("needs_evidence", "needs evidence")
    assert needs.needs == (
        "an eval run of v2 with scripted on suite revision 1 with task pass rate ≥ 0.8 and trigger F1 ≥ 0.5"
    )
    graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": False}, version=2)
    assert gate_of(skill, 2, "author").needs == "task pass rate ≥ 0.8 (its run has 0)"
    graded_run(skill, outcomes={"t-pr": True, "t-poem": True, "k-sql": True}, version=2)
    assert (gate_of(skill, 2, "author").status, gate_of(skill, 2, "author").needs) == ("allowed", "")

    assert gate_of(skill, 2, "analyst").status == "admin_override"
    assert gate_of(skill, 2, "analyst").needs == "the policy lets only admin, author change it"
    removal = gate_of(skill, None, "author")
    assert (removal.status, removal.title) == ("admin_override", "admin override only")
    assert "a version no eval run with scripted vouches for" in removal.needs


def test_the_gate_and_the_move_agree_for_every_status(skill):
    """The console's status before the click is what the service does after it."""
    eval_suite_replace(skill=skill, document=SUITE)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    label_policy_set(label="staging", roles=["admin"])
    for label, role in [("production", "author"), ("staging", "author"), ("staging", "admin")]:
        version = skill.versions.get(number=2)
        gate = label_gate(skill=skill, label=label, version=version, role=role)
        try:
            label_policy_enforce(skill=skill, label=label, version=version, actor=Actor(via="test"), role=role)
            moved = True
        except (LabelPolicyForbidden, LabelPolicyUnmet):
            moved = False
        assert moved == (gate.status == "allowed"), (label, role, gate)


def test_a_move_back_within_the_window_is_allowed_as_a_rollback(skill):
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="production", version_number=2)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE, rollback_window="1h")

    gate = gate_of(skill, 1, "author")

    assert (gate.status, gate.rollback, gate.unmet) == ("allowed", True, [])
    label_move(skill=skill, label="production", version_number=1, role="author")
    assert LabelHistory.objects.first().kind == "rollback"
