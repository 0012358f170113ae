"""agents/store.py: the registry seen through the runtime's plain shapes."""

from __future__ import annotations

import pytest

from agents import store
from agents.runtime.types import Resolution, SkillSummary
from registry.selectors.resolve import resolve
from registry.services.rules import rule_create
from tests.factories import publish

pytestmark = pytest.mark.django_db


def test_the_result_converts_to_the_runtime_resolution():
    publish(
        "image-generation",
        description="Generates images.",
        tags=["images"],
        triggers=["task_match"],
        tools=["run_skill"],
    )
    rule_create(
        name="images",
        pattern="draw",
        skills=["image-generation"],
        instruction="Use it.",
        auto_invoke={"tool": "run_skill", "arguments": {"args": ["{{query}}"]}},
    )

    resolution = store.resolution(resolve(query="draw a cat"))

    assert isinstance(resolution, Resolution)
    assert resolution.skills[0] == SkillSummary(
        name="image-generation",
        description="Generates images.",
        version=1,
        tags=("images",),
        triggers=("task_match",),
        tools=("run_skill",),
        source="user",
    )
    assert resolution.instructions == ("Use it.",)
    fired = resolution.fired_rules[0]
    assert (fired.name, fired.skills, fired.instruction) == ("images", ("image-generation",), "Use it.")
    assert fired.auto_invoke == {"tool": "run_skill", "arguments": {"args": ["{{query}}"]}}
    # The call the runtime makes is the one the console's rule tester shows: the same method.
    assert fired.auto_invoke_call("draw a cat") == {"tool": "run_skill", "arguments": {"args": ["draw a cat"]}}
    assert resolution.prompt_block.startswith("## Skills (mandatory)")


def test_a_loaded_skill_is_its_body_as_stored_at_publish():
    version = publish("pdf", description="Reads PDFs.", body="# PDF\n\nUse `pdftotext`.\n").version
    assert version.body == "\n# PDF\n\nUse `pdftotext`.\n"  # everything after the frontmatter

    document = store.RegistrySkillStore().load("pdf")

    assert (document.name, document.version, document.body) == ("pdf", 1, version.body)


def test_matching_for_a_trigger_keeps_only_the_skills_that_declare_it():
    publish("pdf-reports", description="Summarise pdf reports.", triggers=["task_match"])
    publish("pdf-report-summaries", description="Summarise pdf reports into summaries.")  # no trigger
    publish("csv-files", description="Read csv files.", triggers=["task_match"])

    everything = store.RegistrySkillStore().match("summarise the pdf report summaries")
    declaring = store.RegistrySkillStore().match("summarise the pdf report summaries", trigger="task_match", limit=1)

    assert [summary.name for summary, _ in everything] == ["pdf-report-summaries", "pdf-reports"]
    assert declaring == [everything[1]]
