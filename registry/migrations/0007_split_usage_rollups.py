"""Hourly and daily rollups move from one mixed table into one table each, and weekly rollups
join them (in the mixed table, reading the daily rows of a 90-day range visits pages full of hourly rows,
and adding up 90 rows per skill and version costs more than the page's whole budget). Hourly and
daily rows are copied as they are and the weeks are added up from the days, so no recount from
raw events is needed; going back copies hourly and daily rows into the mixed table again.

The raw events lose their (skill, kind, at) index: nothing reads raw events by skill any more,
and every ingested event would pay for it."""

import datetime as dt

from django.db import migrations, models
from django.db.models import Sum
from django.db.models.functions import Trunc

COUNTS = "offered, loaded, executed, succeeded, failed, feedback_up, feedback_down, metered, tokens, duration_ms, cost"
HOURLY_KEY = 'bucket, skill_name, version, label, "trigger", model, source'
DAILY_KEY = "bucket, skill_name, version"

FORWARD = [
    f"INSERT INTO registry_hourlyrollup ({HOURLY_KEY}, {COUNTS}) "
    f"SELECT {HOURLY_KEY}, {COUNTS} FROM registry_usagerollup WHERE grain = 'hour'",
    f"INSERT INTO registry_dailyrollup ({DAILY_KEY}, {COUNTS}) "
    f"SELECT {DAILY_KEY}, {COUNTS} FROM registry_usagerollup WHERE grain = 'day'",
]
BACKWARD = [
    f"INSERT INTO registry_usagerollup (grain, {HOURLY_KEY}, {COUNTS}) "
    f"SELECT 'hour', {HOURLY_KEY}, {COUNTS} FROM registry_hourlyrollup",
    # Daily rows of the mixed table had empty dimensions.
    f"INSERT INTO registry_usagerollup (grain, {HOURLY_KEY}, {COUNTS}) "
    f"SELECT 'day', {DAILY_KEY}, '', '', '', '', {COUNTS} FROM registry_dailyrollup",
]

# Every batch adds to the same rows of the current hour, day and week: with room left on their
# page the new row version is a HOT update (no new index entries) and pages are pruned as they
# go, instead of the unique index collecting dead versions of the hot rows until VACUUM comes.
FILLFACTOR = 70
TABLES = ("registry_hourlyrollup", "registry_dailyrollup", "registry_weeklyrollup")


def leave_room_for_updates(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {FILLFACTOR})")


def add_up_weeks(apps, schema_editor):
    daily, weekly = apps.get_model("registry", "DailyRollup"), apps.get_model("registry", "WeeklyRollup")
    counts = COUNTS.split(", ")
    weeks = (
        daily.objects.order_by()
        .annotate(week=Trunc("bucket", "week", tzinfo=dt.UTC))
        .values("skill_name", "week", "version")
        .annotate(**{f"sum_{name}": Sum(name) for name in counts})
    )
    rows = (
        weekly(
            bucket=week["week"],
            skill_name=week["skill_name"],
            version=week["version"],
            **{name: week[f"sum_{name}"] for name in counts},
        )
        for week in weeks.iterator(chunk_size=5_000)
    )
    while batch := [row for _, row in zip(range(5_000), rows)]:
        weekly.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0006_version_body"),
    ]

    operations = [
        migrations.CreateModel(
            name="DailyRollup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("bucket", models.DateTimeField()),
                ("skill_name", models.CharField(max_length=128)),
                ("version", models.PositiveIntegerField(default=0)),
                ("offered", models.BigIntegerField(default=0)),
                ("loaded", models.BigIntegerField(default=0)),
                ("executed", models.BigIntegerField(default=0)),
                ("succeeded", models.BigIntegerField(default=0)),
                ("failed", models.BigIntegerField(default=0)),
                ("feedback_up", models.BigIntegerField(default=0)),
                ("feedback_down", models.BigIntegerField(default=0)),
                ("metered", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("duration_ms", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0.0)),
            ],
        ),
        migrations.CreateModel(
            name="HourlyRollup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("bucket", models.DateTimeField()),
                ("skill_name", models.CharField(max_length=128)),
                ("version", models.PositiveIntegerField(default=0)),
                ("offered", models.BigIntegerField(default=0)),
                ("loaded", models.BigIntegerField(default=0)),
                ("executed", models.BigIntegerField(default=0)),
                ("succeeded", models.BigIntegerField(default=0)),
                ("failed", models.BigIntegerField(default=0)),
                ("feedback_up", models.BigIntegerField(default=0)),
                ("feedback_down", models.BigIntegerField(default=0)),
                ("metered", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("duration_ms", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0.0)),
                ("label", models.CharField(blank=True, max_length=36)),
                ("trigger", models.CharField(blank=True, max_length=32)),
                ("model", models.CharField(blank=True, max_length=200)),
                ("source", models.CharField(blank=True, max_length=16)),
            ],
        ),
        migrations.CreateModel(
            name="WeeklyRollup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("bucket", models.DateTimeField()),
                ("skill_name", models.CharField(max_length=128)),
                ("version", models.PositiveIntegerField(default=0)),
                ("offered", models.BigIntegerField(default=0)),
                ("loaded", models.BigIntegerField(default=0)),
                ("executed", models.BigIntegerField(default=0)),
                ("succeeded", models.BigIntegerField(default=0)),
                ("failed", models.BigIntegerField(default=0)),
                ("feedback_up", models.BigIntegerField(default=0)),
                ("feedback_down", models.BigIntegerField(default=0)),
                ("metered", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("duration_ms", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0.0)),
            ],
        ),
        migrations.RemoveIndex(
            model_name="usageevent",
            name="usage_skill_kind_at",
        ),
        migrations.AddIndex(
            model_name="dailyrollup",
            index=models.Index(fields=["bucket"], name="daily_rollup_bucket"),
        ),
        migrations.AddConstraint(
            model_name="dailyrollup",
            constraint=models.UniqueConstraint(fields=("skill_name", "bucket", "version"), name="daily_rollup_key"),
        ),
        migrations.AddIndex(
            model_name="hourlyrollup",
            index=models.Index(fields=["bucket"], name="hourly_rollup_bucket"),
        ),
        migrations.AddConstraint(
            model_name="hourlyrollup",
            constraint=models.UniqueConstraint(
                fields=("skill_name", "bucket", "version", "label", "trigger", "model", "source"),
                name="hourly_rollup_key",
            ),
        ),
        migrations.AddIndex(
            model_name="weeklyrollup",
            index=models.Index(fields=["bucket"], name="weekly_rollup_bucket"),
        ),
        migrations.AddConstraint(
            model_name="weeklyrollup",
            constraint=models.UniqueConstraint(fields=("skill_name", "bucket", "version"), name="weekly_rollup_key"),
        ),
        migrations.RunPython(leave_room_for_updates, migrations.RunPython.noop),
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RunPython(add_up_weeks, migrations.RunPython.noop),
        migrations.DeleteModel(
            name="UsageRollup",
        ),
    ]
