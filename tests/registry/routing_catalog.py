"""A catalog for the routing tests: two skills whose descriptions compete, a distinct third, and
one without trigger cases (tests/registry/api/test_catalog_routing_api.py, the console's tests)."""

from __future__ import annotations

from registry.selectors import skill_get
from registry.services.evals import eval_suite_replace
from tests.factories import publish


def trigger_suite(*queries: str, negative: str = "what is the capital of France") -> dict:
    cases = [{"id": f"t-{n}", "kind": "trigger", "query": q, "should_trigger": True} for n, q in enumerate(queries)]
    return {"cases": [*cases, {"id": "t-no", "kind": "trigger", "query": negative, "should_trigger": False}]}


def competing_catalog() -> None:
    """Two skills whose descriptions compete, a distinct third, and one without evidence."""
    publish(
        "invoice-summary",
        description="Summarizes PDF invoices and billing statements into totals, due dates and vendors.",
        tags=["invoice", "billing", "pdf"],
    )
    publish(
        "invoice-digest",
        description="Condenses PDF invoices and billing statements into a digest of totals, due dates and vendors.",
        tags=["invoice", "billing", "digest"],
    )
    publish(
        "haiku-poems",
        description="Writes haiku poems about the seasons, in five, seven and five syllables.",
        tags=["haiku", "poetry"],
    )
    publish("no-cases", description="Translates emails into formal Japanese.", tags=["translation"])
    for name, queries in {
        "invoice-summary": ("summarize this pdf invoice: totals and due date", "summary of the billing statement"),
        # Its second query reads as much like the other's: where descriptions compete, queries do.
        "invoice-digest": (
            "give me a digest of these invoices",
            "summarize the totals and due dates of these pdf invoices",
        ),
        "haiku-poems": ("write a haiku about autumn leaves", "a short poem in haiku form about snow"),
    }.items():
        eval_suite_replace(skill=skill_get(name=name), document=trigger_suite(*queries))
