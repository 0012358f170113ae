"""Concurrent publishes and label moves on PostgreSQL: version numbers stay 1..N, nothing lost.
Concurrent roll-ups of queued offers (and a rebuild beside them) count each offer once.

SQLite serialises every writer on one file lock, so this says nothing there: the test runs only
against PostgreSQL (CI sets DATABASE_URL).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction
from django.db.models import Sum

from registry.models import DailyRollup, HourlyRollup, LabelHistory, QueuedOffer, Skill, SkillVersion, WeeklyRollup
from registry.selectors.analytics import skill_analytics, usage_funnel
from registry.services.labels import label_move
from registry.services.skills import skill_version_publish
from registry.services.usage import (
    MAX_BATCH,
    OFFERS_PER_ROLL_UP,
    UsageEventInput,
    _offers_roll_up_sql,
    usage_offers_roll_up,
    usage_record,
    usage_rollups_rebuild,
)
from registry.skillformat.bundle import bundle_from_parts
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


LISTED = (("pdf", 1), ("xlsx", 2), ("web", None))


def queue_offers(count: int) -> None:
    """`count` turns' compact offer rows, each listing LISTED, queued as usage_record leaves them."""
    offers = [
        UsageEventInput(event_id=f"turn-{n}:offered:list", kind="offered", skill="", offered_skills=LISTED)
        for n in range(count)
    ]
    for start in range(0, count, MAX_BATCH):
        usage_record(events=offers[start : start + MAX_BATCH], source="runtime", audit=False)
    assert QueuedOffer.objects.count() == count


def offered_per_table() -> list[int]:
    tables = (HourlyRollup, DailyRollup, WeeklyRollup)
    return [rollup.objects.aggregate(n=Sum("offered"))["n"] or 0 for rollup in tables]


def wait_until_blocked(wait_event: str) -> None:
    """Until another connection of this database waits for a lock of this kind ("transactionid":
    a row another transaction holds; "advisory")."""
    for _ in range(200):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = %s",
                [wait_event],
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"no connection waited for a {wait_event} lock")


@pytest.mark.django_db(transaction=True)
def test_two_racing_offer_roll_ups_count_each_offer_once(postgresql):
    count = 2 * OFFERS_PER_ROLL_UP + 500  # several batches each, taken from the same queue
    queue_offers(count)
    counted: list[int] = []

    errors = run_threads(lambda index: counted.append(usage_offers_roll_up()), 2)

    assert errors == []
    assert sum(counted) == count
    assert not QueuedOffer.objects.exists()
    assert offered_per_table() == [len(LISTED) * count] * 3
    assert {row.skill: row.offered for row in skill_analytics()} == {name: count for name, _ in LISTED}


def hold_in_thread(work) -> tuple[threading.Thread, threading.Event, list]:
    """Run `work` in a transaction on a connection of its own, and keep that transaction open
    (with its locks) until the returned event is set."""
    done, release, results = threading.Event(), threading.Event(), []

    def run() -> None:
        try:
            with transaction.atomic():
                results.append(work())
                done.set()
                release.wait(timeout=30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    assert done.wait(timeout=30)
    return thread, release, results


def read_in_thread() -> tuple[threading.Thread, list]:
    """A reader on a connection of its own, as an analytics view reads: roll up the queue, then
    read the funnel."""
    results: list = []

    def run() -> None:
        try:
            usage_offers_roll_up()
            results.append(usage_funnel()["offered"])
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results


def roll_up_one_batch() -> int:
    """The first batch of a roll-up alone, to hold its transaction open in the middle of one."""
    sql, params = _offers_roll_up_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_read_behind_a_running_roll_up_waits_for_it_and_counts_what_it_left(postgresql):
    count = OFFERS_PER_ROLL_UP + 10
    queue_offers(count)
    roll_up, release, counted = hold_in_thread(roll_up_one_batch)
    reader, read = read_in_thread()

    wait_until_blocked("transactionid")  # on the queue rows the first roll-up took
    assert read == []
    release.set()
    roll_up.join(timeout=30)
    reader.join(timeout=30)

    assert counted == [OFFERS_PER_ROLL_UP]
    # The first roll-up's counts, and the 10 rows past its batch (a reader that gave up on the
    # rows it waited for would have counted none of them).
    assert read == [count * len(LISTED)]
    assert offered_per_table() == [count * len(LISTED)] * 3
    assert not QueuedOffer.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_roll_up_waits_for_a_rebuild_that_counts_the_queued_offers(postgresql):
    queue_offers(10)
    rebuild, release, _ = hold_in_thread(usage_rollups_rebuild)
    reader, read = read_in_thread()

    wait_until_blocked("advisory")  # the rebuild holds the offer queue alone
    release.set()
    rebuild.join(timeout=30)
    reader.join(timeout=30)

    assert read == [10 * len(LISTED)]
    assert not QueuedOffer.objects.exists()
    assert offered_per_table() == [10 * len(LISTED)] * 3
