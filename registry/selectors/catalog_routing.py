"""The catalog's routing report, without a model: for every trigger case (a case that should load
its skill) of every skill served at a label, what resolve would offer an agent for that query
with the whole catalog there: is the skill in the prompt block, at which rank, and which skills
rank above it. Recall@1/@5 per skill and for the catalog, the confusions (which skill takes whose
queries, and how often) and the pairs of skills whose descriptions compete
(registry/matching/overlap.py), each with the terms they share.

Reads only. Resolve is asked exactly as an agent's turn would ask it (`resolve_in_snapshot`: the
same snapshot, rules, forced skills, ranker and prompt-block budget), so the report is never a
second ranker's opinion. Storing a report and recomputing it in the background is
registry/services/catalog_routing.py's.

A skill without trigger cases is "no evidence", never perfect; a skill that the model may not
invoke (`disable-model-invocation`) is "not offered": it is only listed when forced, and its
cases say nothing about routing.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from registry.matching.overlap import catalog_overlaps, overlaps_with, shared_terms
from registry.matching.ranking import SkillLike
from registry.models import EvalSuiteRevision
from registry.readmodel.skill import EffectiveSkill
from registry.readmodel.snapshot import Snapshot, registry_snapshot
from registry.selectors.resolve import resolve_in_snapshot

RANKS_COUNTED = 5  # recall@5; the skills above the intended one that a case names, at most
MEASURED, NO_EVIDENCE, NOT_OFFERED = "measured", "no evidence", "not offered"


@dataclass(frozen=True)
class RoutingInputs:
    """Everything a report is computed from, and the digest that names it."""

    label: str | None
    snapshot: Snapshot
    cases: dict[int, list[dict[str, Any]]]  # skill id -> its trigger cases that should load it
    digest: str

    @property
    def case_count(self) -> int:
        return sum(len(cases) for cases in self.cases.values())


def _trigger_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cases if c.get("kind") == "trigger" and c.get("should_trigger") is True]


def catalog_routing_inputs(*, label: str | None) -> RoutingInputs:
    """The snapshot resolve reads at `label` now, the served skills' newest suite revisions (what
    an eval run would run), and a digest of both: equal digests, equal reports."""
    snapshot = registry_snapshot(label=label)
    served = {skill.skill_id for skill in snapshot.skills}
    newest = EvalSuiteRevision.objects.filter(number=F("suite__revision")).values_list("suite__skill_id", "cases")
    cases: dict[int, list[dict[str, Any]]] = {}
    for skill_id, suite_cases in newest.iterator(chunk_size=2000):
        if skill_id in served and (triggers := _trigger_cases(suite_cases or [])):
            cases[skill_id] = triggers
    # Of the content, not of row ids or generations: a database restored, or a test database
    # made afresh, repeats those for other content, while the shared cache keeps its reports.
    digest = hashlib.sha256()
    digest.update(json.dumps([label, settings.MAX_SKILLS_IN_PROMPT, settings.MAX_PROMPT_CHARS]).encode())
    digest.update(json.dumps([settings.CATALOG_OVERLAP_THRESHOLD, sorted(cases.items())], sort_keys=True).encode())
    for skill in snapshot.skills:
        digest.update(
            f"{skill.skill_id}:{skill.name}:{skill.version}:{skill.fingerprint}:{skill.model_invocable};".encode()
        )
    for rule, _ in snapshot.rules:
        digest.update(json.dumps([rule.name, rule.pattern, rule.skills, rule.priority]).encode())
    return RoutingInputs(label=label, snapshot=snapshot, cases=cases, digest=digest.hexdigest()[:32])


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _case_result(snapshot: Snapshot, skill: EffectiveSkill, case: dict[str, Any]) -> dict[str, Any]:
    """Where resolve puts `skill` for the case's query, and who is above it (the first five)."""
    result = resolve_in_snapshot(snapshot=snapshot, query=case["query"])
    listed = [(entry.skill.name, entry.score, bool(entry.forced_by)) for entry in result.skills]
    names = [name for name, _, _ in listed]
    rank: int | None = None
    if skill.name in names:
        rank = names.index(skill.name) + 1
        above = names[: rank - 1]
    else:
        above = [name for name, score, forced in listed if score > 0 or forced]
    return {"case": case["id"], "query": case["query"], "rank": rank, "above": above[:RANKS_COUNTED]}


def _skill_report(snapshot: Snapshot, skill: EffectiveSkill, cases: list[dict[str, Any]]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": skill.name,
        "version": skill.version,
        "status": MEASURED,
        "cases": len(cases),
        "recall_at_1": None,
        "recall_at_5": None,
        "in_block": None,
        "results": [],
    }
    if not skill.model_invocable:
        return {**entry, "status": NOT_OFFERED}
    if not cases:
        return {**entry, "status": NO_EVIDENCE}
    results = [_case_result(snapshot, skill, case) for case in cases]
    ranks = [r["rank"] for r in results]
    return {
        **entry,
        "recall_at_1": _ratio(sum(1 for rank in ranks if rank == 1), len(ranks)),
        "recall_at_5": _ratio(sum(1 for rank in ranks if rank is not None and rank <= RANKS_COUNTED), len(ranks)),
        "in_block": _ratio(sum(1 for rank in ranks if rank is not None), len(ranks)),
        "results": results,
    }


def _confusions(snapshot: Snapshot, skills: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each measured skill, each skill ranked above it for some of its queries: the share of
    its cases where that happened, and the terms the two share."""
    found = []
    for entry in skills:
        if entry["status"] != MEASURED:
            continue
        above = Counter(name for result in entry["results"] for name in result["above"])
        for other, count in above.items():
            both = entry["name"] in snapshot.index and other in snapshot.index
            found.append(
                {
                    "skill": entry["name"],
                    "with": other,
                    "rate": _ratio(count, entry["cases"]),
                    "cases": count,
                    "shared_terms": list(shared_terms(snapshot.index, entry["name"], other)) if both else [],
                }
            )
    return sorted(found, key=lambda c: (-c["rate"], c["skill"], c["with"]))


def _order(entry: dict[str, Any]) -> tuple:
    measured = entry["status"] == MEASURED
    return (not measured, entry["recall_at_1"] if measured else 0, entry["name"])


def catalog_routing_report(inputs: RoutingInputs) -> dict[str, Any]:
    """The report (the API's JSON, `status` "ready"): measured skills worst recall@1 first, then
    those without evidence; confusions and overlaps most frequent / most similar first."""
    snapshot = inputs.snapshot
    skills = sorted(
        (_skill_report(snapshot, skill, inputs.cases.get(skill.skill_id, [])) for skill in snapshot.skills),
        key=_order,
    )
    results = [r for entry in skills if entry["status"] == MEASURED for r in entry["results"]]
    threshold = settings.CATALOG_OVERLAP_THRESHOLD
    return {
        "status": "ready",
        "label": inputs.label,
        "generation": snapshot.generation,
        "digest": inputs.digest,
        "computed_at": timezone.now().isoformat().replace("+00:00", "Z"),
        "cases": len(results),
        "recall_at_1": _ratio(sum(1 for r in results if r["rank"] == 1), len(results)),
        "recall_at_5": _ratio(
            sum(1 for r in results if r["rank"] is not None and r["rank"] <= RANKS_COUNTED), len(results)
        ),
        "overlap_threshold": threshold,
        "skills": skills,
        "confusions": _confusions(snapshot, skills),
        "overlaps": [
            {"a": o.a, "b": o.b, "score": o.score, "shared_terms": list(o.shared_terms)}
            for o in catalog_overlaps(snapshot.index, threshold=threshold)
        ],
    }


@dataclass(frozen=True)
class _Draft:
    name: str
    description: str
    tags: tuple[str, ...]


def description_overlaps(
    *, draft: SkillLike, label: str | None = None, threshold: float | None = None
) -> list[dict[str, Any]]:
    """The served skills (at `label`; resolve's default without one) whose terms compete with a
    SKILL.md being written (`draft`: its name, description and tags), most similar first; the
    skill of the same name (the one being edited) is not compared with itself."""
    snapshot = registry_snapshot(label=label)
    index = snapshot.index.with_changes(added=[_Draft(draft.name, draft.description, tuple(draft.tags or ()))])
    limit = settings.CATALOG_OVERLAP_THRESHOLD if threshold is None else threshold
    return [
        {"skill": o.b, "score": o.score, "shared_terms": list(o.shared_terms)}
        for o in overlaps_with(index, draft.name, threshold=limit)
    ]
