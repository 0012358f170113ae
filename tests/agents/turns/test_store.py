"""agents/turns/store.py: the registry seen through the runtime's plain shapes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.runtime.forcing import forced_skill_and_query
from agents.runtime.loop import run_turn
from agents.runtime.types import Resolution, SkillSummary, TurnRequest, TurnResult
from agents.turns import store
from agents.turns.tools import tool_registry
from registry.models import Skill
from registry.selectors.resolve import registry_caches_reset, resolve, skill_effective
from registry.services.labels import label_move
from registry.services.rules import rule_create
from registry.services.skills import skill_set_enabled
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
    offered = resolution.skills[0]
    assert isinstance(offered, SkillSummary)
    assert (offered.name, offered.description, offered.version, offered.source) == (
        "image-generation",
        "Generates images.",
        1,
        "user",
    )
    assert (offered.tags, offered.triggers, offered.tools) == (("images",), ("task_match",), ("run_skill",))
    # The read model's own answer, as it is: no copy into another shape on the way to the runtime.
    assert offered is skill_effective(name="image-generation")
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


# --- the store loads exactly what resolve offers ---------------------------------------------


class RecordedTrace:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, type: str, data: dict[str, Any]) -> None:
        self.events.append((type, data))

    def text(self) -> str:
        return json.dumps(self.events, default=str)


def scripted_turn(message: str, script: list[dict[str, Any]], workspace: Path) -> tuple[TurnResult, RecordedTrace]:
    """A turn through the worker's parts (resolution, RegistrySkillStore, the tool registry) and
    the scripted model."""
    forced_skill, query = forced_skill_and_query(message, None)
    request = TurnRequest(
        message=message,
        query=query,
        forced_skill=forced_skill,
        model="scripted",
        workspace=workspace,
        llm_options={"script": script},
    )
    trace = RecordedTrace()
    result = run_turn(
        request,
        store=store.RegistrySkillStore(),
        resolution=store.resolution_for_turn(query=query, forced_skill=forced_skill),
        tools=tool_registry(),
        trace=trace,
    )
    return result, trace


READ_RETIRED = [
    {"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "retired-review"}}]},
    {"content": "Nothing to follow."},
]


@pytest.fixture
def retired_skill():
    """A skill whose SKILL.md turns it off, beside one that is on (the control)."""
    files = [("notes.md", b"RETIRED-NOTES", False)]
    publish("retired-review", description="Reviews code.", body="RETIRED-BODY\n", enabled="false", files=files)
    publish("code-review", description="Reviews code.", body="LIVE-BODY\n")


def test_a_skill_whose_skill_md_says_enabled_false_is_neither_offered_nor_loaded(retired_skill):
    registry = store.RegistrySkillStore()

    assert [s.skill.name for s in resolve(query="review code").skills] == ["code-review"]
    assert registry.load("retired-review") is None
    assert registry.read_file("retired-review", "notes.md") is None
    assert registry.load("code-review").body == "\nLIVE-BODY\n"


def test_a_skill_whose_skill_md_says_enabled_false_cannot_be_forced_and_its_body_is_never_read(retired_skill, tmp_path):
    result, trace = scripted_turn("/retired-review check app.py", READ_RETIRED, tmp_path)

    assert result.status == "failed" and "unknown skill '/retired-review'" in result.error
    assert "skill_activated" not in [kind for kind, _ in trace.events]
    assert "RETIRED-BODY" not in trace.text() + result.answer

    # The same turn forcing an enabled skill does read its body: the check above can see a read.
    result, trace = scripted_turn("/code-review check app.py", [{"content": "Reviewed."}], tmp_path)
    assert result.status == "succeeded" and "LIVE-BODY" in trace.text()


def test_read_skill_of_a_skill_whose_skill_md_says_enabled_false_is_a_tool_error(retired_skill, tmp_path):
    result, trace = scripted_turn("review app.py", READ_RETIRED, tmp_path)

    calls = [data for kind, data in trace.events if kind == "tool_call"]
    assert [(call["tool"], call["ok"]) for call in calls] == [("read_skill", False)]
    assert "RETIRED-BODY" not in trace.text() + result.answer
    assert "skill_activated" not in [kind for kind, _ in trace.events]


def test_at_a_label_a_skill_that_does_not_carry_it_is_neither_offered_nor_loaded():
    publish("fresh", description="New, not labelled yet.")
    publish("fresh", description="New, not labelled yet, second draft.")

    assert resolve(query="", label="staging").skills == ()
    assert store.RegistrySkillStore(label="staging").load("fresh") is None
    assert store.RegistrySkillStore().load("fresh").version == 2  # no label: its latest


def test_loading_a_skill_reads_only_its_version_once_the_snapshot_is_built(django_assert_max_num_queries):
    publish("pdf", description="Reads PDFs.")
    resolve(query="pdf")

    # The generation (heard without a query by a process that listens, not inside a test's
    # transaction), the version row, its file list.
    with django_assert_max_num_queries(3):
        assert store.RegistrySkillStore().load("pdf").version == 1


SOURCES = ("bundled", "user", "workspace")  # precedence, lowest first (seed 002)
NAMES = ("alpha", "beta")
READ_AT = (None, "production", "staging", "latest")

skill_specs = st.fixed_dictionaries(
    {
        # per version, what its SKILL.md says about `enabled` (None: says nothing)
        "versions": st.lists(st.sampled_from([None, True, False]), min_size=1, max_size=3),
        "enabled": st.booleans(),  # the skill row's flag (PATCH /skills/{name})
        "production": st.none() | st.integers(1, 3),
        "staging": st.none() | st.integers(1, 3),
    }
)
registries = st.dictionaries(st.tuples(st.sampled_from(NAMES), st.sampled_from(SOURCES)), skill_specs, max_size=5)


def build(registry: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (name, source), spec in registry.items():
        for number, enabled in enumerate(spec["versions"], start=1):
            fields = {} if enabled is None else {"enabled": str(enabled).lower()}
            files = [("notes.md", f"notes {name} {source} {number}".encode(), False)]
            description, body = f"{name} from {source}, v{number}.", f"body {name} {source} {number}\n"
            publish(name, source=source, description=description, body=body, files=files, **fields)
        skill = Skill.objects.get(name=name, source=source)
        for label in ("production", "staging"):
            if spec[label] is not None and spec[label] <= len(spec["versions"]):
                label_move(skill=skill, label=label, version_number=spec[label])
        if not spec["enabled"]:
            skill_set_enabled(skill=skill, enabled=False)


def expected(
    registry: dict[tuple[str, str], dict[str, Any]], name: str, label: str | None, pins: dict[str, int]
) -> tuple[str, int] | None:
    """The rule written out plainly: the enabled source of highest precedence wins the name; it is
    read at its pinned version when pinned (and not at all when it has no such version), else at
    a named label when it carries it (and not at all when it does not), else at `production` when
    no label is asked for and it has one, else at its latest; and its SKILL.md there may turn it
    off."""
    enabled = [(source, spec) for (n, source), spec in registry.items() if n == name and spec["enabled"]]
    if not enabled:
        return None
    source, spec = max(enabled, key=lambda pair: SOURCES.index(pair[0]))
    latest = len(spec["versions"])
    if name in pins:
        if pins[name] > latest:
            return None
        number = pins[name]
    else:
        pointed = None if label == "latest" else spec["production" if label is None else label]
        carried = pointed is not None and pointed <= latest  # `build` sets no label past the latest
        if label not in (None, "latest") and not carried:
            return None  # a named label the skill does not carry leaves it out
        number = pointed if carried else latest
    return None if spec["versions"][number - 1] is False else (source, number)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(registry=registries, pins=st.dictionaries(st.sampled_from(NAMES), st.integers(1, 4), max_size=2))
def test_every_skill_resolve_offers_loads_and_nothing_it_hides_does(registry, pins):
    with transaction.atomic():
        registry_caches_reset()
        build(registry)
        for label, pinned in itertools.product(READ_AT, ({}, pins)):
            offered = {s.skill.name: s.skill.version for s in resolve(query="", label=label, pins=pinned).skills}
            loader = store.RegistrySkillStore(label=label, pins=pinned)
            for name in NAMES:
                want = expected(registry, name, label, pinned)
                document = loader.load(name)
                forced = resolve(query="", label=label, forced_skill=name, pins=pinned)
                if want is None:
                    assert name not in offered and forced.forced_skill is None
                    assert document is None and loader.read_file(name, "notes.md") is None
                else:
                    source, number = want
                    assert offered[name] == number and forced.forced_skill == name
                    assert (document.version, document.body) == (number, f"\nbody {name} {source} {number}\n")
                    assert loader.read_file(name, "notes.md") == f"notes {name} {source} {number}".encode()
                    matched = {summary.name: summary.version for summary, _ in loader.match(f"{name} from {source}")}
                    assert matched.get(name, number) == number
        transaction.set_rollback(True)


def test_a_pinned_skill_is_offered_matched_and_loaded_at_its_pin():
    registry_caches_reset()
    publish("pdf", description="Reads PDFs.", body="V1\n")
    publish("pdf", description="Reads PDF files, tables too.", body="V2\n")
    label_move(skill=Skill.objects.get(name="pdf"), label="production", version_number=1)
    publish("csv", description="Reads CSV files.")

    pinned = store.RegistrySkillStore(pins={"pdf": 2})

    assert {s.skill.name: s.skill.version for s in resolve(query="pdf files", pins={"pdf": 2}).skills} == {
        "pdf": 2,
        "csv": 1,
    }
    assert [(s.name, s.version) for s, _ in pinned.match("pdf tables")][:1] == [("pdf", 2)]
    assert pinned.load("pdf").body == "\nV2\n"
    assert store.RegistrySkillStore().load("pdf").body == "\nV1\n", "unpinned, production"
    assert resolve(query="pdf files").skills[0].skill.version == 1, "a pinned resolve is cached apart"
