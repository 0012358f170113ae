"""Eval suite revisions as evidence, through the API: while a label policy has `require_eval`, a
suite change by a role outside its roles is a proposal the gate does not count until a role
inside accepts it; the refusal names the revision, and the label history shows the suite's
changes beside the moves. Runs are written as the runner leaves them (tests/agents/eval_runs.py);
tests/agents/test_label_policy_integration.py runs the same story on a real worker."""

from __future__ import annotations

import pytest

from registry.models import AuditLog, EvalSuiteRevision, Label, LabelHistory, Skill
from registry.roles import ADMIN, AUTHOR
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.factories import publish
from tests.registry.api.test_label_policies_api import GATE, PASSING, client_for

pytestmark = pytest.mark.django_db

# One task case the skill does not fail: what an author swaps in for the strict suite, which v2
# fails; the gate asks for a task pass rate only.
EASY = {"cases": [SUITE["cases"][2]]}
STRICT_FAILS = {"t-pr": True, "t-poem": True, "k-sql": False}
TASK_GATE = GATE | {"min_trigger_f1": None}


@pytest.fixture
def admin(make_token):
    return client_for(make_token, ADMIN)


@pytest.fixture
def author(make_token):
    return client_for(make_token, AUTHOR)


@pytest.fixture
def skill() -> Skill:
    """Two versions and the strict suite, made by the operator (accepted as made: revision 1)."""
    publish("gated", description="First.")
    skill = publish("gated", description="Second.").skill
    eval_suite_replace(skill=skill, document=SUITE)
    return skill


def move(client, version: int):
    return client.put("/api/v1/skills/gated/labels/production", {"version": version}, format="json")


def put_suite(client, document: dict) -> dict:
    response = client.put("/api/v1/skills/gated/evals", document, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def accept(client, number: int):
    return client.post(f"/api/v1/skills/gated/evals/revisions/{number}/accept")


def history(client) -> list[tuple]:
    rows = client.get("/api/v1/skills/gated/labels").json()["history"]
    return [(row["kind"], row["label"], row["suite_revision"], row["to_version"], row["changed_by"]) for row in rows]


def test_an_easy_suite_from_outside_the_roles_does_not_count_until_an_admin_accepts_it(skill, admin, author):
    label_policy_set(label="production", roles=["admin"], require_eval=TASK_GATE)
    strict = graded_run(skill, outcomes=STRICT_FAILS, version=2)  # v2 fails the strict suite

    # The author, outside the policy's roles, replaces the strict suite with one easy case.
    suite = put_suite(author, EASY)
    assert (suite["revision"], suite["accepted"], suite["counted_revision"]) == (2, False, 1)
    run = graded_run(skill, outcomes={"k-sql": True}, version=2)  # runs may use the proposal
    assert run.suite_revision.number == 2 and run.summary["task"]["rate"] == 1.0

    refused = move(admin, 2)
    assert refused.status_code == 409, refused.content
    assert "suite revision 2 was not accepted" in refused.json()["detail"]
    # The strict run is still the one judged; the easy one is named as what does not count.
    assert refused.json()["unmet"] == [
        {"check": "min_task_rate", "wanted": 0.8, "got": 0.0, "run": str(strict.pk)},
        {
            "check": "suite_accepted",
            "wanted": {"suite_revision": 2, "accepted": True},
            "got": "proposed",
            "run": str(run.pk),
        },
    ]
    assert not Label.objects.filter(name="production").exists()

    # Only a role inside the policy accepts; then the run made before counts as it stands.
    assert accept(author, 2).status_code == 403
    accepted = accept(admin, 2)
    assert accepted.status_code == 200, accepted.content
    assert (accepted.json()["accepted"], accepted.json()["counted_revision"]) == (True, 2)
    assert accepted.json()["accepted_by"] == EvalSuiteRevision.objects.get(number=2).accepted_by.username

    moved = move(admin, 2)
    assert moved.status_code == 200, moved.content
    author_name = EvalSuiteRevision.objects.get(number=2).created_by.username
    admin_name = EvalSuiteRevision.objects.get(number=2).accepted_by.username
    assert history(author) == [
        ("move", "production", None, 2, admin_name),
        ("suite_accept", "", 2, None, admin_name),
        ("suite_proposal", "", 2, None, author_name),
    ]
    audit = AuditLog.objects.get(action="eval_suite.accept")
    assert (audit.object_repr, audit.after["revision"], audit.after["proposed_by"]) == ("gated", 2, author_name)


def test_a_change_by_a_role_inside_the_policy_is_accepted_as_made(skill, author):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)

    suite = put_suite(author, {"cases": SUITE["cases"][::-1]})

    assert (suite["revision"], suite["accepted"], suite["counted_revision"]) == (2, True, 2)
    graded_run(skill, outcomes=PASSING, version=2)
    assert move(author, 2).status_code == 200
    assert [row[:3] for row in history(author)] == [("move", "production", None), ("suite_change", "", 2)]


def test_an_admin_s_change_is_accepted_whatever_roles_the_policy_names(skill, admin):
    label_policy_set(label="production", roles=["author"], require_eval=GATE)
    assert put_suite(admin, EASY)["accepted"] is True


def test_a_pending_proposal_leaves_the_evidence_on_the_accepted_revision_counting(skill, admin, author):
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    graded_run(skill, outcomes=PASSING, version=2)  # on the strict revision 1
    put_suite(author, EASY)

    assert move(admin, 2).status_code == 200


def test_a_proposal_without_a_run_is_named_as_the_revision_the_next_run_will_use(skill, admin, author):
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    put_suite(author, EASY)

    refused = move(admin, 2)

    assert refused.status_code == 409
    assert refused.json()["unmet"][0] | {"got": None} == {
        "check": "suite_accepted",
        "wanted": {"suite_revision": 2, "accepted": True},
        "got": None,
        "run": None,
    }


def test_accepting_is_refused_for_an_unknown_or_superseded_revision_and_repeats_harmlessly(skill, admin, author):
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    put_suite(author, EASY)  # 2, proposed
    put_suite(admin, {"cases": SUITE["cases"][:2]})  # 3, accepted as made

    missing = accept(admin, 9)
    assert missing.status_code == 404 and "no eval suite revision 9" in missing.json()["detail"]
    superseded = accept(admin, 2)
    assert superseded.status_code == 409 and superseded.json()["fields"] == {"revision": "superseded by 3"}
    assert accept(admin, 3).status_code == 200
    assert AuditLog.objects.filter(action="eval_suite.accept").count() == 0
    assert accept(admin, 1).status_code == 200  # accepted already: nothing changes


def test_runs_name_the_suite_revision_they_ran_and_whether_the_gate_counts_it(skill, admin, author):
    label_policy_set(label="production", roles=["admin"], require_eval=GATE)
    put_suite(author, EASY)
    run = graded_run(skill, outcomes={"k-sql": True}, version=2)

    listed = author.get("/api/v1/skills/gated/evals/runs").json()["results"]
    assert [(row["id"], row["suite_revision"], row["suite_revision_accepted"]) for row in listed] == [
        (str(run.pk), 2, False)
    ]
    accept(admin, 2)
    shown = author.get(f"/api/v1/evals/runs/{run.pk}").json()
    assert (shown["suite_revision"], shown["suite_revision_accepted"]) == (2, True)


def test_without_an_eval_gate_every_change_is_accepted_and_the_label_history_stays_moves_only(skill, author):
    label_policy_set(label="production", roles=["admin"])  # a policy, but no require_eval

    assert put_suite(author, EASY)["accepted"] is True
    assert not LabelHistory.objects.exists()
