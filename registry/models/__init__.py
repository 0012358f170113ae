"""The registry's tables, one module per concept. Invariants live in database constraints; behaviour
lives in services. Every model is importable from here (`from registry.models import Skill`)."""

from __future__ import annotations

from registry.models.audit import AuditLog
from registry.models.capabilities import VersionCapabilities
from registry.models.catalog_evals import CatalogEvalCaseResult, CatalogEvalRun
from registry.models.evals import (
    EVAL_RUN_FINISHED,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
    EvalSuiteRevision,
    eval_run_turns,
)
from registry.models.labels import Label, LabelChange, LabelHistory, LabelPolicy
from registry.models.logins import LoginCounter
from registry.models.model_checks import ModelCheck, ModelCheckKind, ModelCheckRun, ModelCheckSide, ModelCheckStatus
from registry.models.rules import ForceIncludeRule
from registry.models.scans import VERDICT_RANK, ScanFinding, ScanStatus, ScanVerdict, SkillScan
from registry.models.signing import PublisherKey, SigningKey, VersionAttestation
from registry.models.skills import SOURCE_PRIORITY, Blob, Skill, SkillFile, SkillSource, SkillVersion
from registry.models.skillsets import (
    Skillset,
    SkillsetLabel,
    SkillsetLabelHistory,
    SkillsetMember,
    SkillsetVersion,
)
from registry.models.state import RegistryChange, RegistryState
from registry.models.tokens import ApiToken, TokenScope
from registry.models.usage import (
    ROLLUP_COUNT_COLUMNS,
    DailyRollup,
    HourlyRollup,
    QueuedOffer,
    RollupCounts,
    UsageEvent,
    UsageKind,
    UsageSource,
    WeeklyRollup,
)
from registry.models.webhooks import DeliveryStatus, Webhook, WebhookDelivery, WebhookEvent

__all__ = [
    "ApiToken",
    "AuditLog",
    "Blob",
    "CatalogEvalCaseResult",
    "CatalogEvalRun",
    "DailyRollup",
    "DeliveryStatus",
    "EVAL_RUN_FINISHED",
    "EvalCaseResult",
    "EvalRun",
    "EvalRunStatus",
    "EvalSuite",
    "EvalSuiteRevision",
    "ForceIncludeRule",
    "HourlyRollup",
    "Label",
    "LabelChange",
    "LabelHistory",
    "LabelPolicy",
    "LoginCounter",
    "ModelCheck",
    "ModelCheckKind",
    "ModelCheckRun",
    "ModelCheckSide",
    "ModelCheckStatus",
    "PublisherKey",
    "QueuedOffer",
    "ROLLUP_COUNT_COLUMNS",
    "RegistryChange",
    "RegistryState",
    "RollupCounts",
    "SOURCE_PRIORITY",
    "ScanFinding",
    "ScanStatus",
    "ScanVerdict",
    "Skill",
    "SkillFile",
    "SkillScan",
    "Skillset",
    "SkillsetLabel",
    "SkillsetLabelHistory",
    "SkillsetMember",
    "SkillsetVersion",
    "SkillSource",
    "SigningKey",
    "SkillVersion",
    "TokenScope",
    "UsageEvent",
    "UsageKind",
    "UsageSource",
    "VersionCapabilities",
    "VersionAttestation",
    "VERDICT_RANK",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WeeklyRollup",
    "eval_run_turns",
]
