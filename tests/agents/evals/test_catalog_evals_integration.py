"""A catalog eval run end to end on the offline model: the API queues it, a real Celery worker runs
every served skill's trigger cases as turns with the whole catalog offered, and the run's matrix
names the two skills whose descriptions overlap as a collision and not the distinct third; its
figures equal what the stored traces say."""

from __future__ import annotations

from collections import Counter

import pytest

from agents.models import AgentTurn, TraceEvent, TurnOrigin
from registry.models import CatalogEvalCaseResult
from tests.registry.routing_catalog import competing_catalog
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RUNS = "/api/v1/catalog/evals/runs"
PAIR = {"invoice-summary", "invoice-digest"}


def run_ended(api, run_id: str, worker: WorkerProcess) -> dict:
    def ended():
        body = api.get(f"{RUNS}/{run_id}").json()
        return body if body["status"] in ("succeeded", "failed", "cancelled") else None

    try:
        return wait_for(ended, message=f"catalog eval run {run_id} to end")
    except AssertionError:
        raise AssertionError("the run did not end; worker output:\n" + worker.output()[-6000:]) from None


def loaded_per_query(run_id: str) -> Counter:
    """(query's skill, skill loaded) pairs, counted from the stored traces alone (the oracle)."""
    pairs: Counter = Counter()
    for result in CatalogEvalCaseResult.objects.filter(run_id=run_id):
        events = TraceEvent.objects.filter(turn_id=result.turn_id, type="skill_activated")
        for name in {event.data["skill"] for event in events if event.data.get("trigger") != "forced"}:
            pairs[(result.skill, name)] += 1
    return pairs


def test_a_catalog_run_on_the_offline_model_names_the_overlapping_pair_and_not_the_third(api, worker):
    competing_catalog()

    answer = api.post(RUNS, {"model": "offline", "repeat": 2}, format="json")
    assert answer.status_code == 202, answer.json()
    body = run_ended(api, answer.json()["id"], worker)

    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": 12, "total": 12} and body["turns"] == 12
    collisions = [(c["skill"], c["with"]) for c in body["collisions"]]
    assert collisions, body["skills"]
    assert all({a, b} == PAIR for a, b in collisions)
    skills = {entry["name"]: entry for entry in body["skills"]}
    assert skills["haiku-poems"]["loaded_self"]["rate"] == 1.0
    assert skills["haiku-poems"]["loaded_other"] == []
    assert skills["no-cases"]["status"] == "no evidence" and skills["no-cases"]["loaded_self"] is None

    # The matrix is what the traces say, and each collision links to turns that loaded the other.
    oracle = loaded_per_query(body["id"])
    for name, entry in skills.items():
        if entry["queries"]:
            assert entry["loaded_self"]["count"] == oracle[(name, name)]
            assert {o["skill"]: o["count"] for o in entry["loaded_other"]} == {
                other: count for (skill, other), count in oracle.items() if skill == name and other != name
            }
    for collision in body["collisions"]:
        assert collision["low"] > 0 and collision["turns"]
        for turn_id in collision["turns"]:
            assert TraceEvent.objects.filter(turn_id=turn_id, type="skill_activated", data__skill=collision["with"])
        assert "PDF invoices" in collision["skill_description"] and "PDF invoices" in collision["with_description"]

    turns = CatalogEvalCaseResult.objects.filter(run_id=body["id"]).values_list("turn_id", flat=True)
    assert set(AgentTurn.objects.filter(pk__in=turns).values_list("origin", flat=True)) == {TurnOrigin.EVAL}
