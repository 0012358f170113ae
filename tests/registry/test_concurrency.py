"""Concurrent publishes and label moves on PostgreSQL: version numbers stay 1..N, nothing lost.

SQLite serialises every writer on one file lock, so this says nothing there: the test runs only
against PostgreSQL (CI sets DATABASE_URL).
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from registry.bundle import bundle_from_parts
from registry.models import LabelHistory, Skill, SkillVersion
from registry.services.labels import label_move
from registry.services.skills import skill_version_publish
from tests.factories import make_skill_md

THREADS, PUBLISHES = 8, 5


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...); SQLite serialises all writers")


def run_threads(target, count: int) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            target(index)
        except BaseException as exc:  # collected and re-raised by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_number_versions_1_to_n_without_gaps_or_losses(postgresql):
    def publish_many(index: int) -> None:
        for n in range(PUBLISHES):
            text = make_skill_md("contended", description=f"Edit {n} from writer {index}.")
            skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")

    errors = run_threads(publish_many, THREADS)

    assert errors == []
    assert Skill.objects.filter(name="contended").count() == 1
    numbers = sorted(SkillVersion.objects.filter(skill__name="contended").values_list("number", flat=True))
    assert numbers == list(range(1, THREADS * PUBLISHES + 1))
    descriptions = set(SkillVersion.objects.values_list("description", flat=True))
    assert len(descriptions) == THREADS * PUBLISHES  # every edit landed once
    assert Skill.objects.get(name="contended").latest_version == THREADS * PUBLISHES


@pytest.mark.django_db(transaction=True)
def test_concurrent_label_moves_leave_a_consistent_history(postgresql):
    for n in range(THREADS):
        text = make_skill_md("labelled", description=f"Version {n + 1}.")
        skill_version_publish(bundle=bundle_from_parts(text.encode(), []), source="user")
    skill = Skill.objects.get(name="labelled")

    errors = run_threads(lambda i: label_move(skill=skill, label="production", version_number=i + 1), THREADS)

    assert errors == []
    history = list(LabelHistory.objects.order_by("id").values_list("from_version", "to_version"))
    # each move saw the version the previous one left: a chain from None to the final version
    assert history[0][0] is None
    assert all(prev[1] == cur[0] for prev, cur in zip(history, history[1:], strict=False))
    final = skill.labels.get(name="production").version.number
    assert history[-1][1] == final
