"""Label policies through the API: who may change them, what they accept, and how they gate
label moves (403 for a role the policy does not name, 409 with the unmet eval checks, an admin's
override audited and in the label history)."""

from __future__ import annotations

import pytest
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
