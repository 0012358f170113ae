"""A skill's requirements in a turn (the scripted model and the worker's parts: the registry
store, its resolution and tool registry): loading a skill — `read_skill`, forced, auto-invoked — loads
the skills it requires too, at the turn's label or the version the entry pins, and the trace
says why each was added."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents.runtime.loop import run_turn
from agents.runtime.types import TurnRequest, TurnResult
from agents.turns import store
from agents.turns.tools import tool_registry
from registry.models import Skill
from registry.services.labels import label_move
from registry.services.rules import rule_create
from tests.agents.turns.test_store import RecordedTrace
from tests.factories import publish

pytestmark = pytest.mark.django_db


def requiring(name: str, requires: str, body: str, description: str | None = None):
    return publish(
        name,
        description=description or f"The {name} skill, for {name} work.",
        body=body,
        metadata=f'{{requires: "{requires}"}}' if requires else "{tags: plain}",
    )


@pytest.fixture
def report_skills():
    """report -> pdf-tools (production v1 / latest v2) -> fonts; report -> units@1 (a pin)."""
    requiring("fonts", "", "# FONTS-BODY")
    requiring("pdf-tools", "skill:fonts", "# PDF-TOOLS-V1")
    requiring("pdf-tools", "skill:fonts", "# PDF-TOOLS-V2")
    requiring("units", "", "# UNITS-V1")
    requiring("units", "", "# UNITS-V2")
    requiring("report", "skill:pdf-tools, skill:units@1, tool:Bash", "# REPORT-BODY")
    for name, number in (("fonts", 1), ("pdf-tools", 1), ("report", 1)):
        label_move(skill=Skill.objects.get(name=name), label="production", version_number=number)


def run(script: list[dict], *, forced_skill: str | None = None, label: str | None = None) -> Turn:
    """A turn through the worker's parts (resolution, RegistrySkillStore, the tool registry) at
    `label`, with the scripted model."""
    query = "make the report"
    request = TurnRequest(
        message=query,
        query=query,
        forced_skill=forced_skill,
        model="scripted",
        workspace=Path(tempfile.mkdtemp()),
        llm_options={"script": script},
    )
    recorded = RecordedTrace()
    result = run_turn(
        request,
        store=store.RegistrySkillStore(label=label),
        resolution=store.resolution_for_turn(query=query, forced_skill=forced_skill, label=label),
        tools=tool_registry(),
        trace=recorded,
    )
    return Turn(result, recorded.events)


@dataclass
class Turn:
    result: TurnResult
    events: list[tuple[str, dict[str, Any]]]


def trace(turn: Turn, type: str) -> list[dict]:
    return [data for kind, data in turn.events if kind == type]


READ_REPORT = [
    {"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "report"}}]},
    {"content": "Done.", "tool_calls": []},
]


def test_read_skill_loads_the_required_skills_at_the_turn_label_and_the_pin(report_skills):
    turn = run(READ_REPORT, label="production")

    assert turn.result.status == "succeeded", turn.result.error
    required = [(e["skill"], e["version"], e["why"]) for e in trace(turn, "skill_required")]
    assert required == [
        ("pdf-tools", 1, "required by report"),
        ("units", 1, "required by report (skill:units@1)"),
        ("fonts", 1, "required by pdf-tools"),
    ]
    activated = [(e["skill"], e["version"], e["trigger"]) for e in trace(turn, "skill_activated")]
    assert activated == [
        ("report", 1, "read_skill"),
        ("pdf-tools", 1, "required"),
        ("units", 1, "required"),
        ("fonts", 1, "required"),
    ]
    [result] = [e for e in trace(turn, "tool_call") if e.get("tool") == "read_skill"]
    content = str(result)
    assert "REPORT-BODY" in content and "PDF-TOOLS-V1" in content and "UNITS-V1" in content and "FONTS-BODY" in content
    assert "PDF-TOOLS-V2" not in content and "UNITS-V2" not in content


def test_at_latest_the_unpinned_requirement_follows_the_label_and_the_pin_holds(report_skills):
    turn = run(READ_REPORT, label="latest")

    assert [(e["skill"], e["version"]) for e in trace(turn, "skill_required")] == [
        ("pdf-tools", 2),
        ("units", 1),
        ("fonts", 1),
    ]


def test_a_forced_skill_gets_its_required_skills_in_the_prompt(report_skills):
    turn = run([{"content": "Done.", "tool_calls": []}], forced_skill="report", label="production")

    assert turn.result.status == "succeeded", turn.result.error
    assert [e["skill"] for e in trace(turn, "skill_required")] == ["pdf-tools", "units", "fonts"]
    [call] = trace(turn, "llm_call")[:1]
    prompt = str(call)
    assert "REPORT-BODY" in prompt and "PDF-TOOLS-V1" in prompt and "FONTS-BODY" in prompt


def test_an_auto_invoked_skill_brings_its_requirements(report_skills):
    rule_create(
        name="reports",
        pattern=r"\breport\b",
        skills=["report"],
        auto_invoke={"tool": "read_skill", "arguments": {"skill_name": "report"}},
    )
    turn = run([{"content": "No.", "tool_calls": []}, {"content": "Done.", "tool_calls": []}], label="production")

    assert trace(turn, "auto_invoke"), trace(turn, "warning")
    assert [e["why"] for e in trace(turn, "skill_required")] == [
        "required by report",
        "required by report (skill:units@1)",
        "required by pdf-tools",
    ]
