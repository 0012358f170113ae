"""The registry's tables. Invariants live in database constraints; behaviour lives in services."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower


class SkillSource(models.TextChoices):
    BUNDLED = "bundled", "Bundled"
    USER = "user", "User"
    WORKSPACE = "workspace", "Workspace"


# seed 002: bundled < user < workspace; the highest enabled source wins a name.
SOURCE_PRIORITY = {SkillSource.BUNDLED: 1, SkillSource.USER: 2, SkillSource.WORKSPACE: 3}


class Skill(models.Model):
    name = models.CharField(max_length=128)
    source = models.CharField(max_length=16, choices=SkillSource.choices, default=SkillSource.USER)
    enabled = models.BooleanField(default=True)
    # The newest version number; publishing locks this row and increments it, which is what
    # keeps version numbers contiguous under concurrent publishes.
    latest_version = models.PositiveIntegerField(default=0)
    # For folder-backed sources: a hash of the folder's file names, sizes, modes and mtimes at
    # the last sync, so `skills sync` only re-reads folders that changed (seed 002's mtime cache).
    sync_signature = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "source"]
        # Case-insensitive, as the file systems the skill is exported to may be: `UPPER-case` and
        # `upper-case` would be one folder. Stored names are ASCII (services refuse others), so
        # Lower() folds alike on PostgreSQL and SQLite.
        constraints = [models.UniqueConstraint(Lower("name"), "source", name="skill_unique_lower_name_per_source")]

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"

    @property
    def priority(self) -> int:
        return SOURCE_PRIORITY[SkillSource(self.source)]


class Blob(models.Model):
    """File content stored once by its sha256, shared by every version that contains it."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()

    def __str__(self) -> str:
        return self.sha256

    @classmethod
    def digest(cls, content: bytes) -> str:
        return hashlib.sha256(content).hexdigest()


class SkillVersion(models.Model):
    """An immutable snapshot of a skill: the raw SKILL.md is the source of truth, the rest is derived."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    skill_md = models.TextField()
    # The Markdown after the frontmatter, kept at publish so that loading a skill for an agent
    # does not parse its SKILL.md again.
    body = models.TextField(default="")
    fingerprint = models.CharField(max_length=64)
    name = models.CharField(max_length=128)
    description = models.TextField()
    frontmatter = models.JSONField(default=dict)
    tags = models.JSONField(default=list)
    triggers = models.JSONField(default=list)
    tools = models.JSONField(default=list)
    warnings = models.JSONField(default=list)
    description_tokens = models.PositiveIntegerField(default=0)
    body_tokens = models.PositiveIntegerField(default=0)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="version_unique_number_per_skill"),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.skill.name} v{self.number}"

    @property
    def skill_md_sha256(self) -> str:
        """The digest of SKILL.md's bytes as served (the fingerprint's SKILL.md line)."""
        return hashlib.sha256(self.skill_md.encode("utf-8")).hexdigest()

    def label_names(self) -> list[str]:
        """The labels pointing at this version, by name."""
        return sorted(self.labels.values_list("name", flat=True))


class SkillFile(models.Model):
    """A file of a version. A symbolic link inside the skill (`CLAUDE.md -> AGENTS.md`) is a row
    with its target text in `link_target` and the blob, size and executable bit of the file it
    resolves to, so readers that want bytes read every row alike and export writes a link."""

    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")
    size = models.PositiveBigIntegerField()
    executable = models.BooleanField(default=False)
    link_target = models.CharField(max_length=1024, blank=True, default="")

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="file_unique_path_per_version")]

    def __str__(self) -> str:
        return self.path

    @property
    def sha256(self) -> str:
        return self.blob_id

    @property
    def mode(self) -> int:
        return 0o755 if self.executable else 0o644

    @property
    def link(self) -> str | None:
        return self.link_target or None


class Label(models.Model):
    """A movable pointer (`production`, `staging`, ...) to one version of a skill."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=36)
    version = models.ForeignKey(SkillVersion, on_delete=models.PROTECT, related_name="labels")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)
    # A rollout: `weight`% of subjects read `canary_version` while the label stays on `version`.
    # A rollback sets the weight to 0 and keeps the canary, so its comparison stays readable.
    canary_version = models.ForeignKey(
        SkillVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="canary_labels"
    )
    weight = models.PositiveSmallIntegerField(default=0)
    rollout_started_at = models.DateTimeField(null=True, blank=True)
    rollout_started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rolled_back_at = models.DateTimeField(null=True, blank=True)
    rollback_figures = models.JSONField(null=True, blank=True)  # what the guard measured when it fired

    class Meta:
        ordering = ["skill", "name"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "name"], name="label_unique_name_per_skill"),
            models.CheckConstraint(condition=~Q(name="latest"), name="label_latest_is_implicit"),
            models.CheckConstraint(condition=Q(weight__lte=100), name="label_weight_at_most_100"),
        ]

    @property
    def rollout_active(self) -> bool:
        return self.canary_version_id is not None and self.weight > 0

    def rollout_end(self) -> None:
        """Forget the rollout (the caller saves): an abort, or a move that promotes or replaces it."""
        self.canary_version = None
        self.weight = 0
        self.rollout_started_at = self.rolled_back_at = None
        self.rollout_started_by = None
        self.rollback_figures = None

    @property
    def canary_number(self) -> int | None:
        return self.canary_version.number if self.canary_version is not None else None

    def __str__(self) -> str:
        return f"{self.skill.name}@{self.name}"


class LabelChange(models.TextChoices):
    """What a label history row records. A rollout keeps the label on its stable version
    (`from_version`) and sends `weight` percent of subjects to `to_version`."""

    MOVE = "move"  # the label now points to to_version
    DELETE = "delete"  # the label was removed (to_version is null)
    OVERRIDE = "override"  # an admin moved it although its policy's checks were unmet (`unmet`, `reason`)
    ROLLOUT_START = "rollout_start"
    ROLLOUT_STEP = "rollout_step"  # the canary's weight changed
    PROMOTE = "promote"  # the canary became the label's version
    ABORT = "abort"  # the rollout ended; the label stays on from_version
    # The label went back: the guard set the canary's weight to 0 (`weight` 0, `reason` holds the
    # figures), or a move to a version it served within its policy's rollback_window (no weight).
    ROLLBACK = "rollback"


class LabelHistory(models.Model):
    """One change of a label, written once and never edited (registry/services/label_policies.py)."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="label_history")
    label = models.CharField(max_length=36)
    kind = models.CharField(max_length=16, choices=LabelChange.choices, default=LabelChange.MOVE)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField(null=True, blank=True)  # null: the label was deleted
    weight = models.PositiveSmallIntegerField(null=True, blank=True)  # rollouts: percent sent to to_version
    reason = models.TextField(blank=True)
    unmet = models.JSONField(null=True, blank=True)  # overrides: the policy checks that were not met
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=120, blank=True)  # console, api token <name>, system
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        verbose_name_plural = "label history"

    def __str__(self) -> str:
        return f"{self.skill.name}@{self.label}: {self.from_version} -> {self.to_version}"


class LabelPolicy(models.Model):
    """Who may move a label (of any skill) and on what evidence; `guard` is read by the rollout
    watcher. The shapes are checked by registry/services/label_policies.py."""

    label = models.CharField(max_length=36, unique=True)
    roles = models.JSONField(default=list)  # role names allowed to move the label
    require_eval = models.JSONField(null=True, blank=True)  # {model, min_task_rate, min_trigger_f1, not_worse}
    guard = models.JSONField(null=True, blank=True)  # {min_n, p_worse}
    # Moving the label back to a version it served this recently needs a role, not new evidence.
    rollback_window = models.DurationField(default=timedelta(days=7))
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["label"]
        verbose_name_plural = "label policies"

    def __str__(self) -> str:
        return f"policy of {self.label}"


class ForceIncludeRule(models.Model):
    """seed 004: a regex on the user query that adds skills (and an instruction) to a turn."""

    name = models.CharField(max_length=100, unique=True)
    pattern = models.TextField()
    skills = models.JSONField(default=list)
    tools = models.JSONField(default=list, blank=True)
    instruction = models.TextField(blank=True)
    auto_invoke = models.JSONField(null=True, blank=True)
    priority = models.IntegerField(default=0)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return self.name


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


class AuditLog(models.Model):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=120, blank=True)  # "console", "api token <name>", "cli"
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=255)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type} {self.object_repr}"


class TokenScope(models.TextChoices):
    SKILLS_READ = "skills:read"
    SKILLS_WRITE = "skills:write"
    RULES_WRITE = "rules:write"
    USAGE_WRITE = "usage:write"
    ANALYTICS_READ = "analytics:read"
    AGENT_RUN = "agent:run"
    WEBHOOKS_WRITE = "webhooks:write"
    POLICIES_WRITE = "policies:write"


class ApiToken(models.Model):
    """A bearer token; only the sha256 of the secret is stored, the secret is shown once."""

    name = models.CharField(max_length=100, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    prefix = models.CharField(max_length=12, db_index=True)
    secret_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class RegistryState(models.Model):
    """One row whose `generation` grows with every registry write (see selectors/generation.py)."""

    generation = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"generation {self.generation}"


class RegistryChange(models.Model):
    """What one generation changed, written in the same transaction as the bump, so a process
    holding a resolve snapshot of an earlier generation re-reads only that (registry/readmodel/snapshot.py)."""

    class Scope(models.TextChoices):
        SKILL = "skill", "a skill"  # a publish, label move or enable/disable of `skill_name`
        RULES = "rules", "the rules"
        ALL = "all", "anything"  # processes rebuild their snapshots

    generation = models.PositiveBigIntegerField(db_index=True)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    skill_name = models.CharField(max_length=128, blank=True)

    def __str__(self) -> str:
        return f"generation {self.generation}: {self.scope} {self.skill_name}".rstrip()


class WebhookEvent(models.TextChoices):
    SKILL_PUBLISHED = "skill.published"
    LABEL_MOVED = "label.moved"
    LABEL_ROLLED_BACK = "label.rolled_back"
    RULE_CHANGED = "rule.changed"
    SKILL_ENABLED = "skill.enabled"
    SKILL_DISABLED = "skill.disabled"


class Webhook(models.Model):
    """A receiver of registry events. The secret is kept as given, because each delivery is
    signed with it (HMAC); reads show only its last characters. Deleting a hook deactivates it
    and forgets the secret, so its deliveries stay readable and nothing is sent to it again."""

    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=256)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.url

    @property
    def secret_hint(self) -> str:
        # Four characters of a short secret would give away too much of it.
        return f"…{self.secret[-4:]}" if len(self.secret) >= 16 else ""


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # waiting for its first attempt or the next retry
    SENDING = "sending"  # claimed by a worker
    DELIVERED = "delivered"  # the receiver answered 2xx: never sent again
    FAILED = "failed"  # attempts used up, or refused (an address that is not public)


class WebhookDelivery(models.Model):
    """One event for one hook. The row is written in the transaction that made the change, so a
    change rolled back leaves none; its payload is the exact bytes signed and sent each attempt."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(default=uuid.uuid4)
    event = models.CharField(max_length=32, choices=WebhookEvent.choices)
    payload = models.BinaryField()
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status = models.PositiveIntegerField(null=True, blank=True)  # the receiver's HTTP status
    last_response = models.TextField(blank=True)  # the start of the receiver's answer
    last_error = models.TextField(blank=True)  # why the last attempt failed, when it did
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["webhook", "event_id"], name="delivery_unique_event_per_hook")]
        # The reaper's requeue looks for unfinished deliveries every few seconds: only those are indexed.
        indexes = [
            models.Index(fields=["status"], name="delivery_unfinished", condition=Q(status__in=["pending", "sending"]))
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.event_id} to webhook {self.webhook_id}"


class EvalSuite(models.Model):
    """A skill's eval cases (not a version's: every version runs the same cases). The cases
    themselves live in revisions; `revision` is the newest one's number."""

    skill = models.OneToOneField(Skill, on_delete=models.CASCADE, related_name="eval_suite")
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"evals of {self.skill.name} (revision {self.revision})"


class EvalSuiteRevision(models.Model):
    """One saved state of a suite, kept: a run names the revision it ran, so its results stay
    readable after the suite changes."""

    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    cases = models.JSONField(default=list)  # the validated cases, as `{"cases": [...]}` holds them
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["suite", "-number"]
        constraints = [models.UniqueConstraint(fields=["suite", "number"], name="eval_revision_unique_number")]

    def __str__(self) -> str:
        return f"{self.suite_id} revision {self.number}"


class EvalRunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


EVAL_RUN_FINISHED = (EvalRunStatus.SUCCEEDED, EvalRunStatus.FAILED, EvalRunStatus.CANCELLED)


class EvalRun(models.Model):
    """One run of a suite revision against one version of its skill with one model. Each case x
    repeat (x with and without the skill, for a baseline) is an EvalCaseResult and one agent turn."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="eval_runs")
    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="eval_runs")
    label = models.CharField(max_length=36, blank=True)  # the label the version was chosen by, if any
    model = models.CharField(max_length=200)
    repeat = models.PositiveIntegerField(default=1)
    baseline = models.BooleanField(default=False)
    suite_revision = models.ForeignKey(EvalSuiteRevision, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=EvalRunStatus.choices, default=EvalRunStatus.QUEUED)
    error = models.TextField(blank=True)
    # Figures of the graded results, written when the run ends (registry/services/evals.py).
    summary = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["skill", "-created_at"], name="eval_run_skill_newest")]

    def __str__(self) -> str:
        return f"eval run {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in EVAL_RUN_FINISHED


class EvalCaseResult(models.Model):
    """One case x repeat of a run: its turn, once dispatched, and its grade once the turn ended.
    `graded_at` set is what "done" means; it is set by one conditional update, so a result is
    never counted twice however many workers grade the run."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8)  # trigger | task
    repeat = models.PositiveIntegerField()  # 1..run.repeat
    baseline = models.BooleanField(default=False)  # run with the skill unavailable
    position = models.PositiveIntegerField()  # dispatch order
    turn = models.ForeignKey(
        "agents.AgentTurn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    passed = models.BooleanField(null=True, blank=True)
    triggered = models.BooleanField(null=True, blank=True)  # trigger cases: the skill was activated unforced
    checks = models.JSONField(default=list)  # [{"check", "passed", "detail"}]
    error = models.TextField(blank=True)  # why the case could not be graded (e.g. no judge model)
    tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "case_id", "repeat", "baseline"], name="eval_result_unique_case_repeat"
            )
        ]
        indexes = [models.Index(fields=["turn"], name="eval_result_turn")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.case_id}#{self.repeat}{' baseline' if self.baseline else ''}"
