"""Eval runs end to end: the API queues a run, a real Celery worker runs each case x repeat as an
agent turn and grades it, and the run's figures are read back through the API."""

from __future__ import annotations

import re

import pytest

from agents.evals.runner import eval_run_advance
from agents.models import AgentTurn, TraceEvent, TurnOrigin, TurnStatus
from registry.models import EvalCaseResult, EvalRun, UsageEvent
from registry.selectors.analytics import wilson_interval
from tests.factories import publish
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WORKER_ENV = {"EVAL_JUDGE_MODEL": "scripted", "AGENT_TURN_REAPER_SECONDS": "0.5", "EVAL_CONCURRENCY": "3"}

READ_PR = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "pr-review"}}]}]


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(concurrency=2, extra_env=WORKER_ENV).start()
    yield process
    worker_exits(process)


def put_suite(api, name: str, cases: list[dict]) -> dict:
    response = api.put(f"/api/v1/skills/{name}/evals", {"cases": cases}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def start_run(api, name: str, **body) -> str:
    response = api.post(f"/api/v1/skills/{name}/evals/runs", body, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return response.json()["id"]


def run_ended(api, run_id: str, worker: WorkerProcess) -> dict:
    def ended():
        body = api.get(f"/api/v1/evals/runs/{run_id}").json()
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None

    try:
        return wait_for(ended, message=f"eval run {run_id} to end")
    except AssertionError:
        raise AssertionError("the run did not end; worker output:\n" + worker.output()[-6000:]) from None


def pr_review_skill() -> None:
    publish(
        "pr-review",
        description="Review a pull request for security problems such as SQL injection.",
        body="# PR review\n\n1. Read the diff.\n2. Name the vulnerable line and its fix.\n",
    )


SUITE = [
    {"id": "t-pr", "kind": "trigger", "query": "review this pull request for security", "should_trigger": True}
    | {"script": READ_PR},
    {"id": "t-poem", "kind": "trigger", "query": "write me a haiku", "should_trigger": False},
    {"id": "t-weather", "kind": "trigger", "query": "will it rain tomorrow", "should_trigger": False},
    # Should trigger, but its script never reads the skill: a false negative.
    {"id": "t-missed", "kind": "trigger", "query": "audit my PR", "should_trigger": True},
    {
        "id": "k-sql",
        "kind": "task",
        "prompt": "Review app.py for SQL injection",
        "expect": [
            {"skill_loaded": "pr-review"},
            {"tool_called": {"name": "read_skill", "arguments": {"skill_name": "pr-review"}}},
            {"answer_matches": "(?i)parameteri[sz]ed"},
            {"answer_not_matches": "(?i)looks fine"},
            {"max_steps": 3},
            {"judge": "The answer names the vulnerable line and a fix."},
        ],
        "script": [*READ_PR, {"content": "Use parameterized queries at line 3."}],
        "judge_script": [{"content": '{"passed": true, "reason": "line 3 and parameterized queries"}'}],
    },
    {
        "id": "k-lazy",
        "kind": "task",
        "prompt": "Review app.py",
        "expect": [{"answer_not_matches": "(?i)looks fine"}, {"judge": "The answer names a fix."}],
        "script": [{"content": "It looks fine to me."}],
        "judge_script": [{"content": "FAIL: no fix is named"}],
    },
]


def recomputed(run: EvalRun, cases: dict[str, dict]) -> dict:
    """The run's figures from its stored turns and traces alone (the oracle)."""
    tp = fp = tn = fn = passed = failed = tokens = 0
    for result in EvalCaseResult.objects.filter(run=run):
        turn = AgentTurn.objects.get(pk=result.turn_id)
        tokens += turn.prompt_tokens + turn.completion_tokens
        case = cases[result.case_id]
        loads = TraceEvent.objects.filter(turn=turn, type="skill_activated", data__skill="pr-review")
        if case["kind"] == "trigger":
            triggered = loads.exclude(data__trigger="forced").exists()
            should = case["should_trigger"]
            tp, fp = tp + (triggered and should), fp + (triggered and not should)
            tn, fn = tn + (not triggered and not should), fn + (not triggered and should)
            continue
        # The task cases' judges are scripted: k-sql's says pass, k-lazy's says fail.
        ok = turn.status == TurnStatus.SUCCEEDED and loads.exists() and case["id"] == "k-sql"
        ok = ok and re.search("(?i)parameteri[sz]ed", turn.answer) is not None and turn.steps <= 3
        passed, failed = passed + ok, failed + (not ok)
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn, "passed": passed, "failed": failed, "tokens": tokens}


def test_a_run_s_summary_equals_the_figures_recomputed_from_its_stored_turns(api, worker):
    pr_review_skill()
    suite = put_suite(api, "pr-review", SUITE)
    assert suite["revision"] == 1

    run_id = start_run(api, "pr-review", model="scripted", repeat=2)
    body = run_ended(api, run_id, worker)

    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 12, "total": 12}
    assert (body["skill"], body["version"], body["suite_revision"], body["model"]) == ("pr-review", 1, 1, "scripted")
    summary, oracle = body["summary"], recomputed(EvalRun.objects.get(pk=run_id), {c["id"]: c for c in SUITE})
    trigger, task = summary["trigger"], summary["task"]
    assert {k: trigger[k] for k in ("tp", "fp", "tn", "fn")} == {"tp": 2, "fp": 0, "tn": 4, "fn": 2}
    assert {k: trigger[k] for k in ("tp", "fp", "tn", "fn")} == {k: oracle[k] for k in ("tp", "fp", "tn", "fn")}
    assert (trigger["precision"], trigger["recall"], trigger["f1"]) == (1.0, 0.5, round(2 / 3, 4))
    assert (task["passed"], task["failed"]) == (oracle["passed"], oracle["failed"]) == (2, 2)
    low, high = wilson_interval(2, 4)
    assert (task["rate"], task["low"], task["high"]) == (0.5, round(low, 4), round(high, 4))
    assert summary["tokens"] == oracle["tokens"] > 0
    assert summary["baseline"] is None and summary["errors"] == 0

    cases = {(c["id"], c["repeat"]): c for c in body["cases"]}
    assert len(cases) == 12 and len({c["turn"] for c in body["cases"]}) == 12
    sql = {c["check"]: c for c in cases[("k-sql", 1)]["checks"]}
    assert all(check["passed"] for check in sql.values()), sql
    assert sql["judge"]["detail"] == "line 3 and parameterized queries"  # the scripted judge's reason
    lazy = {c["check"]: c for c in cases[("k-lazy", 2)]["checks"]}
    assert not lazy["answer_not_matches"]["passed"] and not lazy["judge"]["passed"]
    assert lazy["judge"]["detail"].startswith("FAIL")

    # Eval traffic: tagged, out of the live analytics and of the turn list's default view.
    turn_ids = [c["turn"] for c in body["cases"]]
    assert set(AgentTurn.objects.filter(pk__in=turn_ids).values_list("origin", flat=True)) == {TurnOrigin.EVAL}
    assert not UsageEvent.objects.filter(turn_id__in=turn_ids).exists()
    assert api.get("/api/v1/agent/turns").json()["count"] == 0
    assert api.get("/api/v1/agent/turns?origin=eval").json()["count"] == 12


def test_a_draft_that_drops_a_trigger_phrase_loses_trigger_recall_in_a_compare(api, worker):
    published = publish(
        "invoice-check",
        description="Check an invoice for VAT errors, duplicate payments and missing purchase orders.",
    )
    api.put("/api/v1/skills/invoice-check/labels/production", {"version": 1}, format="json")
    publish("invoice-check", description="Check an invoice for VAT errors.")  # the draft, v2
    assert published.version.number == 1
    put_suite(
        api,
        "invoice-check",
        [
            {"id": "vat", "kind": "trigger", "query": "is the VAT on this invoice right", "should_trigger": True},
            {"id": "dup", "kind": "trigger", "query": "find duplicate payments this month", "should_trigger": True},
            {"id": "po", "kind": "trigger", "query": "which purchase orders are missing", "should_trigger": True},
            {"id": "haiku", "kind": "trigger", "query": "write me a haiku about autumn", "should_trigger": False},
        ],
    )

    published_run = start_run(api, "invoice-check", label="production", model="offline")
    draft_run = start_run(api, "invoice-check", version=2, model="offline")
    a, b = run_ended(api, published_run, worker), run_ended(api, draft_run, worker)
    assert (a["status"], a["version"], b["status"], b["version"]) == ("succeeded", 1, "succeeded", 2)

    compare = api.get(f"/api/v1/evals/runs/compare?a={published_run}&b={draft_run}")
    assert compare.status_code == 200, compare.content
    trigger = compare.json()["trigger"]
    assert trigger["a"]["recall"] == 1.0 and trigger["b"]["recall"] == round(1 / 3, 4)
    assert trigger["f1_b"] < trigger["f1_a"] == 1.0
    flipped = {(flip["id"], flip["now"]) for flip in compare.json()["flipped"]}
    assert flipped == {("dup", "fails"), ("po", "fails")}


def test_a_cancelled_run_stops_dispatching_and_cancels_its_unfinished_turns(api, worker):
    publish("slow-notes", description="Take notes slowly.")
    slow = [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "slow-notes"}}]}] * 8
    put_suite(
        api,
        "slow-notes",
        [
            {"id": f"c{i}", "kind": "trigger", "query": f"notes {i}", "should_trigger": True, "script": slow}
            for i in range(12)
        ],
    )
    run_id = start_run(api, "slow-notes", model="scripted", repeat=2)
    wait_for(lambda: EvalCaseResult.objects.filter(run_id=run_id, turn__isnull=False).exists(), message="a dispatch")

    response = api.post(f"/api/v1/evals/runs/{run_id}/cancel")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    assert api.post(f"/api/v1/evals/runs/{run_id}/cancel").status_code == 409

    dispatched = EvalCaseResult.objects.filter(run_id=run_id, turn__isnull=False)
    turn_ids = list(dispatched.values_list("turn_id", flat=True))
    # Turns that ended before the cancel were graded and replaced; the rest were in flight, at
    # most EVAL_CONCURRENCY (those still ungraded now are no more than were in flight then).
    assert 0 < len(turn_ids) < 24
    assert dispatched.filter(graded_at__isnull=True).count() <= 3
    wait_for(lambda: all(t.is_finished for t in AgentTurn.objects.filter(pk__in=turn_ids)), message="its turns to end")
    # What a reaper round has a worker do for every unfinished run, and what a turn that ended
    # late does for its run: a cancelled run dispatches nothing more.
    assert eval_run_advance(run_id=run_id) is False
    assert EvalCaseResult.objects.filter(run_id=run_id, turn__isnull=False).count() == len(turn_ids)
    assert AgentTurn.objects.filter(origin=TurnOrigin.EVAL, message__startswith="notes ").count() == len(turn_ids)
    body = api.get(f"/api/v1/evals/runs/{run_id}").json()
    assert body["status"] == "cancelled" and body["progress"]["total"] == 24 and body["progress"]["done"] < 24


def test_suite_replace_names_the_bad_case_and_field_and_keeps_revisions(api):
    pr_review_skill()
    bad = [SUITE[0], {"id": "k", "kind": "task", "prompt": "x", "expect": [{"answer_matches": "("}]}]
    response = api.put("/api/v1/skills/pr-review/evals", {"cases": bad}, format="json")
    assert response.status_code == 400
    assert "Case 'k'" in response.json()["detail"]
    assert list(response.json()["fields"]) == ["cases[1].expect[0].answer_matches"]

    assert put_suite(api, "pr-review", SUITE[:2])["revision"] == 1
    assert put_suite(api, "pr-review", SUITE[:2])["revision"] == 1  # the same cases: no new revision
    assert put_suite(api, "pr-review", SUITE[:3])["revision"] == 2
    skill_creator = {"skill_name": "pr-review", "evals": [{"id": 1, "prompt": "p", "expectations": ["It names X"]}]}
    replaced = api.put("/api/v1/skills/pr-review/evals", skill_creator, format="json").json()
    assert replaced["cases"] == [{"id": "eval-1", "kind": "task", "prompt": "p", "expect": [{"judge": "It names X"}]}]
    exported = api.get("/api/v1/skills/pr-review/evals/evals.json").json()
    assert exported["evals"][0]["expectations"] == ["It names X"]


def test_a_baseline_runs_every_case_again_without_the_skill(api, worker):
    pr_review_skill()
    sql = next(case for case in SUITE if case["id"] == "k-sql")
    put_suite(api, "pr-review", [SUITE[0], sql | {"expect": sql["expect"][:5]}])  # no judge

    body = run_ended(api, start_run(api, "pr-review", model="scripted", baseline=True), worker)

    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 4, "total": 4}
    summary = body["summary"]
    assert (summary["trigger"]["recall"], summary["task"]["rate"]) == (1.0, 1.0)
    # Without the skill the same scripts' read_skill finds nothing: no trigger, no task passed.
    assert summary["baseline"]["trigger"]["recall"] == 0.0 and summary["baseline"]["task"]["rate"] == 0.0
    baseline_turns = [c["turn"] for c in body["cases"] if c["baseline"]]
    pins = AgentTurn.objects.filter(pk__in=baseline_turns).values_list("skill_versions", flat=True)
    assert list(pins) == [{"pr-review": 0}, {"pr-review": 0}]
