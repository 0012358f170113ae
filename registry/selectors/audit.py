"""The audit log as the console reads it: filtered, paginated, each row's before/after as a
readable list of field changes."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, NamedTuple

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from registry.models import AuditLog
from registry.roles import ADMIN_ONLY_AUDIT_OBJECTS, audit_sees_accounts

# Typed into the actor filter, this finds writes without a user: the CLI, syncs, login attempts.
NO_USER = "system"
# The object types services record (registry/services/*): suggestions for the filter, which
# also takes any other type.
KNOWN_OBJECT_TYPES = ("skill", "rule", "api_token", "usage_event", "usage_rollup", "user", "group")
COUNT_CAP = 10_000  # entries counted for the pager; beyond it, "10,000+" and the filters narrow
VALUE_CHARS = 1000  # a long value (a rule's pattern, a list of members) is cut for display
_SKILL_REPR = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,127})@(bundled|user|workspace)$")


@dataclass(frozen=True)
class AuditFilter:
    actor: str = ""
    object_type: str = ""
    object: str = ""  # part of the object's name or id, as recorded (`pdf-tools@user`, `ci-token`)
    action: str = ""
    date_from: dt.date | None = None  # inclusive, UTC days
    date_to: dt.date | None = None


@dataclass(frozen=True)
class FieldChange:
    key: str  # dotted for nested objects: `auto_invoke.tool`
    kind: str  # added | removed | changed | same
    before: str | None
    after: str | None


@dataclass(frozen=True)
class AuditEntry:
    log: AuditLog
    changes: list[FieldChange] = field(default_factory=list)

    @property
    def raw_json(self) -> str:
        """Before and after as recorded, for the row's "JSON" disclosure. One line each: with
        `indent`, json falls back to its pure-Python encoder, a fifth of the page's time."""
        dump = partial(json.dumps, ensure_ascii=False, sort_keys=True)
        return f"before: {dump(self.log.before)}\nafter:  {dump(self.log.after)}"

    @cached_property
    def skill(self) -> SkillRef | None:
        """The skill the row is about, for a link to its page."""
        found = _SKILL_REPR.match(self.log.object_repr) if self.log.object_type == "skill" else None
        return SkillRef(found.group(1), found.group(2)) if found else None


class SkillRef(NamedTuple):
    name: str
    source: str


def audit_log_for_user(*, user, filters: AuditFilter) -> QuerySet[AuditLog]:
    """Rows `user` may read, newest first: admins read everything; other roles every row except
    those about accounts (registry/roles.py)."""
    rows = AuditLog.objects.select_related("actor")
    if not audit_sees_accounts(user):
        rows = rows.exclude(object_type__in=ADMIN_ONLY_AUDIT_OBJECTS)
    if filters.actor.lower() == NO_USER:
        rows = rows.filter(actor__isnull=True)
    elif filters.actor:
        rows = rows.filter(actor__username__iexact=filters.actor)
    if filters.object_type:
        rows = rows.filter(object_type=filters.object_type)
    if filters.object:
        rows = rows.filter(object_repr__icontains=filters.object)
    if filters.action:
        rows = rows.filter(action__istartswith=filters.action)
    if filters.date_from:
        rows = rows.filter(at__gte=_day_start(filters.date_from))
    if filters.date_to:
        rows = rows.filter(at__lt=_day_start(filters.date_to + dt.timedelta(days=1)))
    return rows.order_by("-at", "-id")


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows. The log only grows (a row per write, per usage batch,
    per failed login), and an exact COUNT(*) reads all of it on every page view; past the cap
    the filters (dates above all) narrow it down."""

    def __init__(self, rows: QuerySet[AuditLog], per_page: int) -> None:
        super().__init__(rows, per_page)
        self.rows = rows

    @cached_property
    def count(self) -> int:
        return self.rows[: COUNT_CAP + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP


def audit_page(*, user, filters: AuditFilter, page: str | int | None, per_page: int = 50) -> Page:
    """One page of `audit_log_for_user`, its rows as AuditEntry (two queries: count and rows)."""
    paginator = CappedPaginator(audit_log_for_user(user=user, filters=filters), per_page)
    logs = paginator.get_page(page)
    entries = [AuditEntry(log=log, changes=audit_changes(log.before, log.after)) for log in logs]
    return Page(entries, logs.number, paginator)


def _day_start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)


_MISSING = object()


def audit_changes(before: Any, after: Any) -> list[FieldChange]:
    """Before/after JSON as field changes, nested objects flattened to dotted keys. A creation
    (no before) lists every field as added, a deletion every field as removed."""
    old, new = _flatten(before), _flatten(after)
    changes = []
    for key in [*old, *(key for key in new if key not in old)]:
        was, now = old.get(key, _MISSING), new.get(key, _MISSING)
        if was is _MISSING:
            changes.append(FieldChange(key, "added", None, _shown(now)))
        elif now is _MISSING:
            changes.append(FieldChange(key, "removed", _shown(was), None))
        else:
            changes.append(FieldChange(key, "same" if was == now else "changed", _shown(was), _shown(now)))
    return changes


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        return {prefix or "value": value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(item, dict) and item:
            flat.update(_flatten(item, path))
        else:
            flat[path] = item
    return flat


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) and value else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "…"
