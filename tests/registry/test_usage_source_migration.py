"""Migration 0013 gives existing usage rows the source of their skill: the skill of the highest
precedence whose version existed when the event happened; going back adds up the rows that then
differ by source only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("registry", "0012_usage_event_skill_turn")]
AFTER = [("registry", "0013_usage_skill_source")]
T0 = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)  # the bundled code-review v1
T2 = dt.datetime(2026, 3, 4, 9, tzinfo=dt.UTC)  # a workspace code-review v1, shadowing it


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def skill(apps, source: str, at: dt.datetime) -> None:
    skills, versions = apps.get_model("registry", "Skill"), apps.get_model("registry", "SkillVersion")
    row = skills.objects.create(name="code-review", source=source, latest_version=1)
    version = versions.objects.create(
        skill=row, number=1, skill_md="---", name="code-review", description="d", fingerprint="f" * 64
    )
    skills.objects.filter(pk=row.pk).update(created_at=at)
    versions.objects.filter(pk=version.pk).update(created_at=at)


def test_existing_usage_goes_to_the_skill_that_had_the_version_then_and_back():
    apps = migrate(BEFORE)
    skill(apps, "bundled", T0)
    skill(apps, "workspace", T2)
    events = apps.get_model("registry", "UsageEvent").objects
    for event_id, name, version, at in [
        ("backdated", "code-review", 1, T0 - dt.timedelta(days=30)),  # before either: the first to have v1
        ("between", "code-review", 1, T0 + dt.timedelta(days=1)),
        ("after", "code-review", 1, T2 + dt.timedelta(hours=1)),
        ("no-version", "code-review", None, T2 + dt.timedelta(hours=1)),
        ("unknown", "ghost", 1, T2),
    ]:
        events.create(event_id=event_id, kind="succeeded", skill_name=name, version=version, at=at)
    events.create(
        event_id="offer",
        kind="offered",
        skill_name="",
        offered_skills=[["code-review", 1], ["ghost", None]],
        at=T0 + dt.timedelta(days=1),
    )
    daily = apps.get_model("registry", "DailyRollup").objects
    daily.create(skill_name="code-review", bucket=T0.replace(hour=0), version=1, succeeded=3)
    daily.create(skill_name="code-review", bucket=T2.replace(hour=0) + dt.timedelta(days=1), version=1, failed=2)

    apps = migrate(AFTER)

    events = apps.get_model("registry", "UsageEvent").objects
    assert dict(events.exclude(kind="offered").values_list("event_id", "skill_source")) == {
        "backdated": "bundled",
        "between": "bundled",
        "after": "workspace",
        "no-version": "workspace",
        "unknown": "",
    }
    assert events.get(event_id="offer").offered_skills == [["code-review", 1, "bundled"], ["ghost", None, ""]]
    daily = apps.get_model("registry", "DailyRollup").objects
    assert sorted(daily.values_list("skill_source", "succeeded", "failed")) == [("bundled", 3, 0), ("workspace", 0, 2)]
    # After the migration one (name, day, version) may hold a row per source...
    daily.create(skill_name="code-review", skill_source="workspace", bucket=T0.replace(hour=0), version=1, failed=4)

    apps = migrate(BEFORE)

    # ...and going back adds them up under the key without a source.
    daily = apps.get_model("registry", "DailyRollup").objects
    assert sorted(daily.values_list("bucket", "succeeded", "failed")) == [
        (T0.replace(hour=0), 3, 4),
        (T2.replace(hour=0) + dt.timedelta(days=1), 0, 2),
    ]
    offer = apps.get_model("registry", "UsageEvent").objects.get(event_id="offer")
    assert offer.offered_skills == [["code-review", 1], ["ghost", None]]
    # Back to the newest migrations: the tests after this one need every later table.
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
