"""Migration 0007 moves rollups out of the mixed table without a recount: hourly and daily rows
are copied as they are, the weeks are added up from the days, and going back restores the mixed
table."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("registry", "0006_version_body")]
AFTER = [("registry", "0007_split_usage_rollups")]
MONDAY = dt.datetime(2026, 3, 9, tzinfo=dt.UTC)


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def mixed_row(grain: str, bucket: dt.datetime, version: int, succeeded: int, trigger: str = "") -> dict:
    return {
        "grain": grain,
        "bucket": bucket,
        "skill_name": "pdf",
        "version": version,
        "trigger": trigger,
        "succeeded": succeeded,
        "failed": 1,
        "tokens": 10 * succeeded,
        "cost": 0.5,
    }


def test_rollups_move_into_their_own_tables_and_back():
    apps = migrate(BEFORE)
    mixed = apps.get_model("registry", "UsageRollup")
    rows = [
        mixed_row("hour", MONDAY + dt.timedelta(hours=9), 1, 2, trigger="read_skill"),
        mixed_row("hour", MONDAY + dt.timedelta(days=6, hours=23), 1, 3, trigger="forced"),
        mixed_row("day", MONDAY, 1, 2),
        mixed_row("day", MONDAY + dt.timedelta(days=6), 1, 3),  # Sunday: the same ISO week
        mixed_row("day", MONDAY + dt.timedelta(days=7), 1, 4),  # the next week
        mixed_row("day", MONDAY, 2, 5),
    ]
    mixed.objects.bulk_create([mixed(**row) for row in rows])

    apps = migrate(AFTER)

    hourly = apps.get_model("registry", "HourlyRollup").objects
    daily = apps.get_model("registry", "DailyRollup").objects
    weekly = apps.get_model("registry", "WeeklyRollup").objects
    assert sorted(hourly.values_list("trigger", "succeeded", "tokens")) == [("forced", 3, 30), ("read_skill", 2, 20)]
    assert daily.count() == 4
    assert sorted(weekly.values_list("bucket", "version", "succeeded", "failed", "tokens", "cost")) == [
        (MONDAY, 1, 5, 2, 50, 1.0),
        (MONDAY, 2, 5, 1, 50, 0.5),
        (MONDAY + dt.timedelta(days=7), 1, 4, 1, 40, 0.5),
    ]

    apps = migrate(BEFORE)

    back = apps.get_model("registry", "UsageRollup").objects
    assert sorted(back.values_list("grain", "bucket", "version", "trigger", "succeeded")) == sorted(
        (r["grain"], r["bucket"], r["version"], r["trigger"], r["succeeded"]) for r in rows
    )
    # Back to the newest migrations: the tests after this one need every later table.
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
