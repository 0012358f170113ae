"""A resolve snapshot moved forward by what changed (registry/readmodel/snapshot.py) equals one built
afresh, after any series of publishes, label moves, enables/disables and rule edits (issue 12)."""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.models import ForceIncludeRule, RegistryChange, Skill
from registry.readmodel.generation import current_generation
from registry.readmodel.results import registry_caches_reset
from registry.readmodel.snapshot import _SNAPSHOTS, Snapshot, _build_snapshot, registry_delta, registry_snapshot
from registry.selectors.resolve import _resolve
from registry.services.generation import registry_changed
from registry.services.labels import label_delete, label_move
from registry.services.rules import rule_create, rule_delete, rule_update
from registry.services.skills import skill_set_enabled
from tests.factories import publish

pytestmark = pytest.mark.django_db

NAMES = ("alpha", "beta", "gamma")
RULE_NUMBERS = itertools.count()
LABELS = (None, "staging", "latest")

operations = st.one_of(
    st.tuples(
        st.just("publish"),
        st.sampled_from(NAMES),
        st.sampled_from(["user", "workspace"]),  # workspace shadows user (precedence)
        st.sampled_from(["Reads pdf reports.", "Writes csv summaries.", "Deploys kubernetes."]),
        st.sampled_from(["", "disable-model-invocation: true", "enabled: false", "tags: [pdf, csv]"]),
    ),
    st.tuples(st.just("label"), st.sampled_from(NAMES), st.sampled_from(["production", "staging"]), st.integers(1, 2)),
    st.tuples(st.just("unlabel"), st.sampled_from(NAMES), st.sampled_from(["production", "staging"])),
    st.tuples(st.just("enable"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("rule"), st.sampled_from(["pdf", "csv|kubernetes", "^deploy"]), st.sampled_from(NAMES)),
    st.tuples(st.just("rule_edit"), st.sampled_from(["pdf", "summar", "nothing"]), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("rule_delete")),
    st.tuples(st.just("look"), st.sampled_from(LABELS)),  # a resolve in between: the snapshot moves on
)


def apply(operation: tuple, seen: dict[str | None, int]) -> None:
    kind, *args = operation
    if kind == "publish":
        name, source, description, extra = args
        fields = dict([extra.split(": ", 1)]) if extra else {}
        publish(name, source=source, description=description, **{k.replace("-", "__"): v for k, v in fields.items()})
    elif kind in ("label", "unlabel", "enable"):
        skill = Skill.objects.filter(name=args[0]).order_by("?").first()
        if skill is None:
            return
        if kind == "label" and args[2] <= skill.latest_version:
            label_move(skill=skill, label=args[1], version_number=args[2])
        elif kind == "unlabel" and skill.labels.filter(name=args[1]).exists():
            label_delete(skill=skill, label=args[1])
        elif kind == "enable":
            skill_set_enabled(skill=skill, enabled=args[1])
    elif kind == "rule":
        pattern, name = args
        rule_create(name=f"rule-{next(RULE_NUMBERS)}", pattern=pattern, skills=[name], instruction="Go.")
    elif kind == "rule_edit":
        rule = ForceIncludeRule.objects.order_by("?").first()
        if rule is not None:
            rule_update(rule=rule, pattern=args[0], priority=args[1], enabled=args[2])
    elif kind == "rule_delete":
        rule = ForceIncludeRule.objects.order_by("?").first()
        if rule is not None:
            rule_delete(rule=rule)
    elif kind == "look":
        look(args[0], seen)


def look(label: str | None, seen: dict[str | None, int]) -> None:
    """Read the snapshot at `label`, which moves the one held (of generation `seen[label]`)
    forward, and check it against a rebuild."""
    generation = current_generation()
    if generation != seen[label]:
        # The snapshot last read at this label is still held, however often the other labels
        # moved on since, and the change log accounts for every generation after it: the
        # snapshot moves, not rebuilds.
        held = _SNAPSHOTS.newest_before(generation, label)
        assert held is not None and held.generation == seen[label]
        assert registry_delta(since=seen[label], until=generation) is not None
    assert_same(registry_snapshot(label=label), _build_snapshot(generation, label))
    seen[label] = generation


def assert_same(found: Snapshot, expected: Snapshot) -> None:
    assert found.generation == expected.generation
    assert found.skills == expected.skills
    assert found.by_name == expected.by_name
    assert found.index.state() == expected.index.state()
    assert [rule for rule, _ in found.rules] == [rule for rule, _ in expected.rules]
    assert found.rule_warnings == expected.rule_warnings
    for query in ("pdf reports", "deploy kubernetes now", "csv summaries for alpha", ""):
        inputs = {"generation": expected.generation, "query": query, "label": expected.label, "forced_skill": None}
        inputs.update(context=None, max_skills=150, max_chars=18_000)
        assert _resolve(snapshot=found, **inputs) == _resolve(snapshot=expected, **inputs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(series=st.lists(operations, min_size=1, max_size=10))
def test_a_snapshot_moved_forward_equals_a_rebuild(series):
    with transaction.atomic():
        # Given a registry and snapshots of it held by this process ...
        registry_caches_reset()
        for version in ("Reads pdf reports.", "Reads pdf reports aloud."):  # two versions: labels matter
            publish("alpha", description=version)
            publish("beta", description=version.replace("pdf", "csv"), tags=["csv"])
        rule_create(name="base", pattern="report", skills=["alpha"], instruction="Read it.")
        seen = {held: current_generation() for held in LABELS}
        for held in LABELS:
            registry_snapshot(label=held)
        # ... when any series of writes happens (with resolves in between) ...
        for operation in series:
            apply(operation, seen)
        # ... then each snapshot moved forward from the last one held equals one built afresh.
        for label in LABELS:
            look(label, seen)
        transaction.set_rollback(True)


def test_a_change_of_anything_or_a_gap_in_the_log_means_a_rebuild():
    publish("alpha")
    start = current_generation()
    publish("alpha", description="Second.")
    assert registry_delta(since=start, until=current_generation()).skills == {"alpha"}
    registry_changed()  # no scope: anything may have changed
    assert registry_delta(since=start, until=current_generation()) is None
    after = current_generation()
    publish("beta")
    RegistryChange.objects.filter(generation=current_generation()).delete()
    assert registry_delta(since=after, until=current_generation()) is None
