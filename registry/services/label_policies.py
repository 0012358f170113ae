"""Placeholder for the label policies service (built on wt/policies): no policy is set, so
every move is allowed and history rows carry only what LabelHistory stores today. Replaced
whole by the real module at merge."""

from __future__ import annotations

from typing import Any

from registry.models import LabelHistory, Skill


def label_policy_get(*, label: str) -> Any:
    return None


def label_policy_enforce(
    *, skill: Skill, label: str, version: Any, actor: Any, role: str | None, override_reason: str | None = None
) -> list[dict]:
    return []


def label_history_record(
    *,
    skill: Skill,
    label: str,
    kind: str,
    from_version: int | None,
    to_version: int | None,
    weight: int | None = None,
    actor: Any,
    reason: str = "",
    unmet: list[dict] | None = None,
) -> LabelHistory:
    return LabelHistory.objects.create(
        skill=skill, label=label, from_version=from_version, to_version=to_version, changed_by=actor.user_or_none
    )
