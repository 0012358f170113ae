"""The read model (registry/readmodel/) after any series of writes: what it holds, moved forward
from what it held before, equals what a fresh read of the database gives, and reading it never
writes."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry import selectors
from registry.models import RegistryState, Skill
from registry.readmodel.catalog import _CATALOG, Catalog, _catalog, _entries, skill_catalog_entries
from registry.readmodel.effective import effective_skills
from registry.readmodel.generation import current_generation, registry_generation
from registry.readmodel.results import registry_caches_reset
from registry.readmodel.served import skill_served, skill_version_of
from registry.readmodel.snapshot import registry_snapshot
from registry.selectors.resolve import resolve, skill_effective, skill_version_effective
from registry.services.rules import rule_create
from tests.factories import publish
from tests.registry.test_snapshot_delta import LABELS, NAMES, apply, operations

pytestmark = pytest.mark.django_db


def catalog_state(catalog: Catalog) -> list[tuple]:
    return [
        (
            (entry.skill.pk, entry.skill.name, entry.skill.source, entry.skill.enabled),
            (entry.newest.pk, entry.newest.number, entry.newest.description),
            (entry.effective, entry.representative, entry.shadowed_by, entry.label_numbers),
        )
        for entry in catalog.entries
    ]


def assert_catalog_fresh() -> None:
    generation = current_generation()
    held = skill_catalog_entries()
    assert held.generation == generation
    fresh = _catalog(generation, _entries(names=None))
    for query in ("pdf reports csv", "aloud", "alpha"):
        assert search_state(held, query) == search_state(fresh, query)


def search_state(catalog: Catalog, query: str) -> list[tuple]:
    return [(m.skill.skill_id, m.score, m.reasons) for m in catalog.index.score(query)]


def assert_served_fresh(label: str | None) -> None:
    fresh = {skill.name: skill for skill in effective_skills(label=label)}
    for name in NAMES:
        served = skill_served(name=name, label=label)
        assert served == fresh.get(name)
        assert skill_effective(name=name, label=label) == served
        version = skill_version_of(served)
        if served is None:
            assert version is None
        else:
            assert (version.skill_id, version.number) == (served.skill_id, served.version)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(series=st.lists(st.tuples(operations, st.booleans()), min_size=1, max_size=10))
def test_what_the_read_model_holds_after_any_writes_equals_a_fresh_read(series):
    with transaction.atomic():
        # Given a registry whose catalogue and snapshots this process holds ...
        registry_caches_reset()
        for description in ("Reads pdf reports.", "Reads pdf reports aloud."):
            publish("alpha", description=description)
            publish("beta", description=description.replace("pdf", "csv"), tags=["csv"])
        rule_create(name="base", pattern="report", skills=["alpha"], instruction="Read it.")
        seen = {label: current_generation() for label in LABELS}
        for label in LABELS:
            registry_snapshot(label=label)
        skill_catalog_entries()
        # ... when any series of writes happens, with reads of the catalogue between some ...
        for operation, read_between in series:
            apply(operation, seen)
            if read_between:
                assert_catalog_fresh()
        # ... then the catalogue, moved forward from the one held, and which version of which
        # skill each label's request gets equal a fresh read.
        assert_catalog_fresh()
        for label in LABELS:
            assert_served_fresh(label)
        transaction.set_rollback(True)


def test_the_catalogue_moves_forward_after_a_publish_rather_than_rebuilding():
    publish("alpha", description="Reads pdf reports.")
    publish("beta", description="Writes csv summaries.")
    before = skill_catalog_entries()
    publish("alpha", description="Reads pdf reports aloud.")

    with CaptureQueriesContext(connection) as queries:
        after = skill_catalog_entries()

    assert _CATALOG.get((current_generation(),)) is after
    beta = [entry for entry in after.entries if entry.skill.name == "beta"]
    assert beta == [entry for entry in before.entries if entry.skill.name == "beta"]  # kept, not re-read
    assert [e.newest.description for e in after.entries if e.skill.name == "alpha"] == ["Reads pdf reports aloud."]
    # The change log, then the changed name's skills, and their versions and labels by id.
    alpha = Skill.objects.get(name="alpha").pk
    read = [q["sql"] for q in queries.captured_queries if "registry_skill" in q["sql"]]
    assert len(read) == 3
    assert all("'alpha'" in sql or f"IN ({alpha})" in sql for sql in read), read


def test_the_search_index_after_a_publish_tokenises_only_what_changed():
    publish("alpha", description="Reads pdf reports.")
    publish("beta", description="Writes csv summaries.")
    before = skill_catalog_entries().index
    publish("alpha", description="Reads pdf reports aloud.")

    after = skill_catalog_entries()

    held = {id(doc) for doc in before._docs.values()}  # `before` keeps them alive, so ids stay theirs
    assert [doc.skill.name for doc in after.index._docs.values() if id(doc) in held] == ["beta"]
    fresh = _catalog(after.generation, _entries(names=None))
    assert search_state(after, "aloud csv") == search_state(fresh, "aloud csv")


def test_reads_never_write():
    publish("alpha", description="Reads pdf reports.", tags=["pdf"])
    publish("alpha", description="Reads pdf reports aloud.")
    registry_caches_reset()
    with CaptureQueriesContext(connection) as queries:
        resolve(query="pdf reports")
        skill_version_effective(name="alpha")
        selectors.skill_catalog(q="pdf")
        selectors.skill_md_raw(name="alpha")
        selectors.skill_sources(names=["alpha"])
    statements = [q["sql"].lstrip().split()[0].upper() for q in queries.captured_queries]
    assert statements and set(statements) <= {"SELECT", "SAVEPOINT", "RELEASE"}, statements


def test_reading_the_generation_does_not_create_its_row_and_the_next_write_does():
    RegistryState.objects.all().delete()

    assert registry_generation() == 0
    assert not RegistryState.objects.exists()

    publish("alpha")
    assert RegistryState.objects.get().generation > 0
    assert Skill.objects.filter(name="alpha").exists()
