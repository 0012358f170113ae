"""Label policies through the API: who may change them, what they accept, and how they gate
label moves and removals (403 for a role the policy does not name, 409 with the unmet eval checks,
an admin's override audited and in the label history), and the rollback a policy's roles may make
without new evidence."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import AuditLog, Label, LabelHistory, Skill
from registry.roles import ADMIN, AUTHOR
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db

PASSING = {"t-pr": True, "t-poem": True, "k-sql": True}
FAILING_TASK = {"t-pr": True, "t-poem": True, "k-sql": False}
GATE = {"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8, "not_worse": True}


def client_for(make_token, role: str) -> APIClient:
    scopes = {ADMIN: ["skills:read", "skills:write", "policies:write"], AUTHOR: ["skills:read", "skills:write"]}
    client = APIClient()
    secret = make_token(scopes.get(role, ["skills:read"]), user=user_with_role(role))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def admin(make_token):
    return client_for(make_token, ADMIN)


@pytest.fixture
def author(make_token):
    return client_for(make_token, AUTHOR)


@pytest.fixture
def skill() -> Skill:
    publish("gated", description="First.")
    skill = publish("gated", description="Second.").skill
    eval_suite_replace(skill=skill, document=SUITE)
    return skill


def move(client, version: int, label: str = "production", **extra):
    return client.put(f"/api/v1/skills/gated/labels/{label}", {"version": version, **extra}, format="json")


# --- the policies themselves --------------------------------------------------------------------


def test_an_admin_sets_reads_lists_and_removes_a_policy_and_each_change_is_audited(admin, author):
    body = {"roles": ["author", "admin"], "require_eval": GATE, "guard": {"min_n": 50, "p_worse": 0.95}}
    response = admin.put("/api/v1/label-policies/production", body, format="json")
    assert response.status_code == 200, response.content
    shown = response.json()
    assert shown["roles"] == ["admin", "author"]
    assert shown["require_eval"] == GATE
    assert shown["guard"] == {"min_n": 50, "p_worse": 0.95}

    assert author.get("/api/v1/label-policies/production").json()["require_eval"] == GATE
    listed = author.get("/api/v1/label-policies").json()
    assert [policy["label"] for policy in listed["results"]] == ["production"]

    replaced = admin.put("/api/v1/label-policies/production", {"roles": ["admin"]}, format="json").json()
    assert replaced["require_eval"] is None and replaced["guard"] is None

    assert admin.delete("/api/v1/label-policies/production").status_code == 204
    assert author.get("/api/v1/label-policies/production").status_code == 404
    actions = list(AuditLog.objects.filter(object_type="label_policy").values_list("action", flat=True))
    assert sorted(actions) == ["label_policy.delete", "label_policy.set", "label_policy.set"]


def test_an_author_may_read_policies_but_not_change_them(author):
    response = author.put("/api/v1/label-policies/production", {"roles": ["author"]}, format="json")
    assert response.status_code == 403
    assert response.json()["scope"] == "policies:write"
    assert author.delete("/api/v1/label-policies/production").status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"roles": []}, "roles"),
        ({"roles": ["boss"]}, "roles"),
        ({}, "roles"),
        ({"roles": ["admin"], "require_eval": {"min_task_rate": 0.5}}, "model"),
        ({"roles": ["admin"], "require_eval": {"model": "scripted", "min_task_rate": 1.5}}, "min_task_rate"),
        ({"roles": ["admin"], "require_eval": {"model": "scripted", "min_trigger_f1": -0.1}}, "min_trigger_f1"),
        ({"roles": ["admin"], "require_eval": "yes"}, "require_eval"),
        ({"roles": ["admin"], "guard": {"min_n": 0, "p_worse": 0.95}}, "min_n"),
        ({"roles": ["admin"], "guard": {"min_n": 50, "p_worse": 0.2}}, "p_worse"),
        ({"roles": ["admin"], "guard": {"min_n": 50}}, "p_worse"),
        ({"roles": ["admin"], "require_eval": {"model": "gpt-9-imaginary"}}, "require_eval.model"),
        ({"roles": ["admin"], "rollback_window": "forever"}, "rollback_window"),
        ({"roles": ["admin"], "rollback_window": "400d"}, "rollback_window"),
        ({"roles": ["admin"], "rollback_window": "-P1D"}, "rollback_window"),
        ({"roles": ["admin"], "rollback_window": 7}, "rollback_window"),
    ],
)
def test_a_bad_policy_is_a_400_naming_the_field(admin, body, field):
    response = admin.put("/api/v1/label-policies/production", body, format="json")
    assert response.status_code == 400, response.content
    assert field in str(response.json()["fields"])
    assert not admin.get("/api/v1/label-policies").json()["results"]


def test_latest_cannot_have_a_policy(admin):
    response = admin.put("/api/v1/label-policies/latest", {"roles": ["admin"]}, format="json")
    assert response.status_code == 400
    assert "label" in response.json()["fields"]


# --- the role gate ------------------------------------------------------------------------------


def test_a_role_the_policy_does_not_name_is_refused_with_403_naming_the_policy(skill, author, make_token):
    label_policy_set(label="production", roles=["admin"])
    response = move(author, 2)
    assert response.status_code == 403
    assert response.json()["error"] == "policy"
    assert response.json()["policy"] == "production"
    assert "production" in response.json()["detail"] and "author" in response.json()["detail"]
    assert not Label.objects.filter(skill=skill).exists()

    analyst = client_for(make_token, "analyst")
    assert move(analyst, 2).status_code == 403  # cannot write at all
    assert not Label.objects.filter(skill=skill).exists()

    assert move(author, 2, label="staging").status_code == 200  # unprotected labels move as before


def test_an_author_cannot_override_nor_remove_a_protected_label(skill, author):
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin"])
    response = move(author, 2, override_reason="I am sure")
    assert response.status_code == 403
    assert author.delete("/api/v1/skills/gated/labels/production").status_code == 403
    assert Label.objects.get(skill=skill, name="production").version.number == 1


# --- the eval gate ------------------------------------------------------------------------------


def refused(response) -> list[dict]:
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["error"] == "policy" and body["detail"]
    return body["unmet"]


def test_a_version_without_an_eval_run_is_refused_with_409(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    unmet = refused(move(author, 2))
    assert unmet == [
        {"check": "eval_run", "wanted": {"model": "scripted", "version": 2, "suite_revision": 1}, "got": None}
        | {"run": None}
    ]


def test_a_run_below_the_thresholds_is_refused_naming_each_check_and_the_run(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    run = graded_run(skill, outcomes={"t-pr": False, "t-poem": True, "k-sql": False}, version=2)
    unmet = refused(move(author, 2))
    assert unmet == [
        {"check": "min_task_rate", "wanted": 0.8, "got": 0.0, "run": str(run.pk)},
        {"check": "min_trigger_f1", "wanted": 0.8, "got": 0.0, "run": str(run.pk)},
    ]


def test_a_run_with_another_model_is_no_evidence(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    graded_run(skill, outcomes=PASSING, version=2, model="other-model")
    assert [check["check"] for check in refused(move(author, 2))] == ["eval_run"]


def test_a_run_on_an_older_suite_revision_is_no_evidence(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    graded_run(skill, outcomes=PASSING, version=2)
    eval_suite_replace(skill=skill, document={"cases": SUITE["cases"][:2]})
    unmet = refused(move(author, 2))
    assert unmet[0]["check"] == "eval_run" and unmet[0]["wanted"]["suite_revision"] == 2


def test_a_version_worse_than_the_held_one_is_refused_by_not_worse(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE | {"min_task_rate": None})
    graded_run(skill, outcomes=PASSING, version=1, repeat=10)
    assert move(author, 1).status_code == 200
    candidate = graded_run(skill, outcomes=FAILING_TASK, version=2, repeat=10)

    unmet = refused(move(author, 2))

    assert [check["check"] for check in unmet] == ["not_worse"]
    assert unmet[0]["got"] >= 0.95 and unmet[0]["run"] == str(candidate.pk)
    assert Label.objects.get(skill=skill, name="production").version.number == 1


def test_a_version_as_good_as_the_held_one_moves(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    graded_run(skill, outcomes=PASSING, version=1, repeat=3)
    graded_run(skill, outcomes=PASSING, version=2, repeat=3)
    assert move(author, 1).status_code == 200
    response = move(author, 2)
    assert response.status_code == 200, response.content
    assert LabelHistory.objects.filter(skill=skill, kind="move").count() == 2


# --- overrides and the history ------------------------------------------------------------------


def test_an_admin_override_moves_the_label_and_is_audited_and_in_the_history(skill, admin, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    run = graded_run(skill, outcomes=FAILING_TASK, version=2)

    response = move(admin, 2, override_reason="Hotfix for the outage; evals follow.")

    assert response.status_code == 200, response.content
    assert Label.objects.get(skill=skill, name="production").version.number == 2
    audit = AuditLog.objects.get(action="label.override")
    assert audit.after["reason"] == "Hotfix for the outage; evals follow."
    assert audit.after["unmet"] == [{"check": "min_task_rate", "wanted": 0.8, "got": 0.0, "run": str(run.pk)}]
    history = author.get("/api/v1/skills/gated/labels").json()["history"]
    assert history[0]["kind"] == "override"
    assert history[0]["reason"] == "Hotfix for the outage; evals follow."
    assert history[0]["unmet"][0]["check"] == "min_task_rate"
    assert history[0]["to_version"] == 2 and history[0]["changed_by"]
    assert history[0]["via"].startswith("api token")


def test_the_history_lists_moves_newest_first_with_their_kind(skill, author):
    assert move(author, 1).status_code == 200
    assert move(author, 2).status_code == 200
    assert author.delete("/api/v1/skills/gated/labels/production").status_code == 204
    body = author.get("/api/v1/skills/gated/labels").json()
    assert [(row["kind"], row["from_version"], row["to_version"]) for row in body["history"]] == [
        ("delete", 2, None),
        ("move", 1, 2),
        ("move", None, 1),
    ]
    assert body["labels"] == []


# --- what a policy accepts: the eval model and the rollback window --------------------------------


def test_the_eval_model_must_be_one_of_agent_models(admin, settings):
    settings.AGENT_MODELS = ["openai/gpt-4o-mini", "offline"]
    body = {"roles": ["admin"], "require_eval": {"model": "scripted", "min_task_rate": 0.8}}

    refused = admin.put("/api/v1/label-policies/production", body, format="json")

    assert refused.status_code == 400, refused.content
    assert refused.json()["error"] == "invalid_policy"
    assert refused.json()["fields"] == {"require_eval.model": "one of openai/gpt-4o-mini, offline"}
    assert "scripted" in refused.json()["detail"] and "AGENT_MODELS" in refused.json()["detail"]
    body["require_eval"]["model"] = "openai/gpt-4o-mini"
    accepted = admin.put("/api/v1/label-policies/production", body, format="json")
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["require_eval"]["model"] == "openai/gpt-4o-mini"


@pytest.mark.parametrize(
    ("given", "shown"),
    [(None, "P7DT00H00M00S"), ("36h", "P1DT12H00M00S"), ("P2D", "P2DT00H00M00S"), ("0d", "P0DT00H00M00S")],
)
def test_the_rollback_window_defaults_to_seven_days_and_reads_back_as_iso_8601(admin, author, given, shown):
    body = {"roles": ["admin"]} | ({"rollback_window": given} if given else {})
    response = admin.put("/api/v1/label-policies/production", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["rollback_window"] == shown
    assert author.get("/api/v1/label-policies/production").json()["rollback_window"] == shown


# --- removing a protected label -------------------------------------------------------------------


def test_an_author_in_the_policy_cannot_remove_an_eval_gated_label(skill, author):
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)

    response = author.delete("/api/v1/skills/gated/labels/production")

    unmet = refused(response)
    assert unmet == [{"check": "removal", "wanted": {"model": "scripted"}, "got": None, "run": None}]
    assert response.json()["gate"] == "admin_override"
    assert "Removing label 'production'" in response.json()["detail"]
    assert Label.objects.get(skill=skill, name="production").version.number == 1
    assert not LabelHistory.objects.filter(skill=skill, kind__in=["delete", "override"]).exists()
    assert author.delete("/api/v1/skills/gated/labels/production?override_reason=sure").status_code == 403
    assert Label.objects.filter(skill=skill, name="production").exists()


def test_an_admin_removes_an_eval_gated_label_only_with_a_reason_that_the_history_keeps(skill, admin, author):
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    assert admin.delete("/api/v1/skills/gated/labels/production").status_code == 409

    response = admin.delete("/api/v1/skills/gated/labels/production?override_reason=Retiring+this+skill")

    assert response.status_code == 204, response.content
    assert not Label.objects.filter(skill=skill, name="production").exists()
    row = author.get("/api/v1/skills/gated/labels").json()["history"][0]
    assert (row["kind"], row["from_version"], row["to_version"]) == ("override", 1, None)
    assert row["reason"] == "Retiring this skill"
    assert [check["check"] for check in row["unmet"]] == ["removal"]
    audit = AuditLog.objects.get(action="label.override")
    assert audit.after["version"] is None and audit.after["reason"] == "Retiring this skill"


def test_a_label_whose_policy_asks_no_evidence_is_removed_by_its_roles(skill, author):
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin", "author"])
    assert author.delete("/api/v1/skills/gated/labels/production").status_code == 204
    assert LabelHistory.objects.get(skill=skill, kind="delete").from_version == 1


# --- rollback -------------------------------------------------------------------------------------


def served_v1_then_v2(skill) -> None:
    """production served v1, then v2 (moved by the operator, whom policies do not bind)."""
    publish("gated", description="Third.")
    label_move(skill=skill, label="production", version_number=1)
    label_move(skill=skill, label="production", version_number=2)


def test_moving_back_to_a_version_served_within_the_window_needs_no_new_evidence(skill, author):
    served_v1_then_v2(skill)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    assert [check["check"] for check in refused(move(author, 3))] == ["eval_run"]  # never served: evidence

    response = move(author, 1)

    assert response.status_code == 200, response.content
    assert Label.objects.get(skill=skill, name="production").version.number == 1
    row = author.get("/api/v1/skills/gated/labels").json()["history"][0]
    assert (row["kind"], row["from_version"], row["to_version"], row["weight"]) == ("rollback", 2, 1, None)
    assert row["unmet"] is None


def test_a_rollback_is_for_the_policys_roles_only(skill, author):
    served_v1_then_v2(skill)
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    assert move(author, 1).status_code == 403


def test_a_version_served_before_the_window_needs_evidence_again(skill, author):
    served_v1_then_v2(skill)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE, rollback_window="2d")
    LabelHistory.objects.filter(skill=skill, from_version=1).update(changed_at=timezone.now() - timedelta(days=3))
    assert [check["check"] for check in refused(move(author, 1))] == ["eval_run"]

    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE, rollback_window="4d")
    assert move(author, 1).status_code == 200


def test_a_zero_window_makes_every_move_back_need_evidence(skill, author):
    served_v1_then_v2(skill)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE, rollback_window="0d")
    assert [check["check"] for check in refused(move(author, 1))] == ["eval_run"]


def test_a_removed_label_is_put_back_on_the_version_it_served_as_a_rollback(skill, admin, author):
    label_move(skill=skill, label="production", version_number=1)
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    assert admin.delete("/api/v1/skills/gated/labels/production?override_reason=Outage").status_code == 204
    assert refused(move(author, 2))  # never served by production

    assert move(author, 1).status_code == 200
    kinds = [row["kind"] for row in author.get("/api/v1/skills/gated/labels").json()["history"]]
    assert kinds == ["rollback", "override", "move"]
