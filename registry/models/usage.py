"""Usage: one event per offer, load, execution, outcome or feedback, the offers still to count,
and the hourly, daily and weekly rollups the analytics read."""

from __future__ import annotations

import uuid

from django.db import models


class UsageKind(models.TextChoices):
    OFFERED = "offered"
    LOADED = "loaded"
    EXECUTED = "executed"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    FEEDBACK = "feedback"


class UsageSource(models.TextChoices):
    RUNTIME = "runtime"  # turns of the built-in agent runtime (API and playground alike)
    API = "api"  # external agents through POST /usage


class UsageEvent(models.Model):
    # Idempotency key: a client re-sending a batch (or a redelivered task) never double-counts.
    event_id = models.CharField(max_length=100, default=uuid.uuid4)  # unique: see Meta
    kind = models.CharField(max_length=16, choices=UsageKind.choices)
    skill_name = models.CharField(max_length=128)
    # Which of the skills called `skill_name` (one per SkillSource): with the version number it
    # names the version itself, so a shadowing source never inherits another's history. Set
    # when the event is stored (see `usage_record`); empty for a name no skill had then.
    skill_source = models.CharField(max_length=16, blank=True, db_default="")
    version = models.PositiveIntegerField(null=True, blank=True)
    trigger = models.CharField(max_length=32, blank=True)
    label = models.CharField(max_length=36, blank=True)  # the label the agent resolved skills through
    model = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=16, choices=UsageSource.choices, default=UsageSource.API)
    turn = models.ForeignKey(
        "agents.AgentTurn",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="usage_events",
        db_index=False,  # see Meta
    )
    client_id = models.CharField(max_length=100, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    rating = models.SmallIntegerField(null=True, blank=True)  # feedback: +1 / -1
    # A turn lists up to ~150 skills: it stores one `offered` row whose `offered_skills` holds
    # every [name, version, skill source] it listed (skill_name is then empty), not one row per
    # skill.
    offered_skills = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(db_index=True)

    class Meta:
        # No index beyond these: every read goes to the rollups, and each index is paid for on
        # every insert of the hot ingest path. event_id's uniqueness is a constraint, not
        # `unique=True`, which on PostgreSQL adds a second (LIKE) index that no query uses; only
        # runtime events have a turn, so API events stay out of the turn indexes: deleting a turn
        # finds its events through the first, the turn list finds the turns that loaded a skill
        # (or failed with it) through the second.
        ordering = ["-at"]
        constraints = [models.UniqueConstraint(fields=["event_id"], name="usage_event_id_unique")]
        indexes = [
            models.Index(fields=["turn"], name="usage_event_turn", condition=models.Q(turn__isnull=False)),
            models.Index(
                fields=["skill_name", "kind", "turn"],
                name="usage_event_skill_turn",
                condition=models.Q(turn__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.skill_name or 'offer list'} v{self.version}"


class QueuedOffer(models.Model):
    """A compact offer row (`offered_skills`) not yet counted into the rollups.

    Counting a turn's ~150 listed skills into three rollup tables was ~450 upserted rows inside
    the turn's finish; the row is queued here instead and `usage_offers_roll_up` counts queued
    offers in batches (every analytics read rolls up first, so reads stay exact). No foreign-key
    constraint: the insert on the hot path checks nothing, and deleting a turn's events needs
    no visit here (an entry whose event is gone counts nothing)."""

    offer = models.OneToOneField(
        UsageEvent, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )

    def __str__(self) -> str:
        return f"queued offer row {self.offer_id}"


# The counters a rollup row keeps, in the order the usage service writes them (analytics sums them).
ROLLUP_COUNT_COLUMNS = (
    "offered",
    "loaded",
    "executed",
    "succeeded",
    "failed",
    "feedback_up",
    "feedback_down",
    "metered",
    "tokens",
    "duration_ms",
    "cost",
)


class RollupCounts(models.Model):
    """Event counts of one rollup bucket, kept current in the transaction that stores the events.

    Hourly and daily rows live in tables of their own: a read names its grain by its table and
    scans only rows of that grain (one mixed table left the ~1/8 daily rows scattered among
    the hourly ones). Version 0 stands for "version not reported" (a NULL would defeat the
    unique key)."""

    bucket = models.DateTimeField()  # start of the UTC hour or day
    skill_name = models.CharField(max_length=128)
    skill_source = models.CharField(max_length=16, blank=True, db_default="")  # as UsageEvent.skill_source
    version = models.PositiveIntegerField(default=0)
    offered = models.BigIntegerField(default=0)
    loaded = models.BigIntegerField(default=0)
    executed = models.BigIntegerField(default=0)
    succeeded = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)
    feedback_up = models.BigIntegerField(default=0)
    feedback_down = models.BigIntegerField(default=0)
    metered = models.BigIntegerField(default=0)  # events that reported tokens, duration or cost
    tokens = models.BigIntegerField(default=0)
    duration_ms = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)

    class Meta:
        abstract = True


class HourlyRollup(RollupCounts):
    """Every dimension an analyst filters or groups by: skill, version, label, trigger, model, source."""

    label = models.CharField(max_length=36, blank=True)
    trigger = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=16, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                # Skill first: one skill's series and the upserts on write find their rows by it.
                fields=["skill_name", "skill_source", "bucket", "version", "label", "trigger", "model", "source"],
                name="hourly_rollup_key",
            )
        ]
        # Reads across skills (the overview filtered by trigger or model) take a range of hours.
        indexes = [models.Index(fields=["bucket"], name="hourly_rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.bucket:%Y-%m-%d %H:00} {self.skill_name} v{self.version}"


class DailyRollup(RollupCounts):
    """Skill and version per UTC day: what the per-skill tables and daily series read when no
    trigger, model or event-label dimension is asked for. With events spread thinly over the
    dimensions an hourly row holds ~1 event; a daily row ~7."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["skill_name", "skill_source", "bucket", "version"], name="daily_rollup_key")
        ]
        indexes = [models.Index(fields=["bucket"], name="daily_rollup_bucket")]

    def __str__(self) -> str:
        return f"{self.bucket:%Y-%m-%d} {self.skill_name} v{self.version}"


class WeeklyRollup(RollupCounts):
    """Skill and version per ISO week (from Monday 00:00 UTC). A range of whole days reads its
    whole weeks here and only the days at either end from the daily rows: a 90-day overview
    adds up ~25 rows per skill and version instead of 90."""

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["skill_name", "skill_source", "bucket", "version"], name="weekly_rollup_key"
            )
        ]
        indexes = [models.Index(fields=["bucket"], name="weekly_rollup_bucket")]

    def __str__(self) -> str:
        return f"week of {self.bucket:%Y-%m-%d} {self.skill_name} v{self.version}"
