"""Template helpers shared by every console page: relative times, label badges, diff rows."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django import template
from django.utils import timezone
from django.utils.duration import duration_iso_string
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from registry.skillformat.skillmd import tag_list

register = template.Library()


def _age(seconds: float) -> str:
    # Hand-rolled rather than django's timesince: tables show hundreds of these per page, and
    # timesince (translation lookups per call) costs a tenth of the skills list's time.
    for limit, unit, size in ((3600, "min", 60), (86400, "h", 3600), (86400 * 60, "days", 86400)):
        if seconds < limit:
            return f"{int(seconds // size)} {unit} ago"
    return ""


@register.simple_tag
def reltime(moment) -> str:
    """`3 h ago`, with the exact UTC time on hover and in the `datetime` attribute."""
    if moment is None:
        return "—"
    moment = moment.astimezone(dt.UTC)
    seconds = (timezone.now() - moment).total_seconds()
    shown = "just now" if seconds < 60 else _age(seconds) or moment.strftime("%b %-d, %Y")
    exact = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    return format_html('<time datetime="{}" title="{}">{}</time>', moment.isoformat(), exact, shown)


@register.simple_tag
def label_badge(name: str) -> str:
    kind = name if name in ("production", "staging") else "custom"
    return format_html('<span class="badge label label-{}">{}</span>', kind, name)


def canary_text(label) -> str:
    """A label's running rollout in words, the same on every page: "v3 serves 10% of production"."""
    return f"v{label.canary_number} serves {label.weight}% of {label.name}"


@register.simple_tag
def canary_badge(label, *, title: str = "") -> str:
    """The badge of a running rollout (`canary v3 · 10%`), its sentence on hover."""
    return format_html(
        '<span class="badge badge-canary" title="{}">canary v{} · {}%</span>',
        title or canary_text(label),
        label.canary_number,
        label.weight,
    )


@register.simple_tag
def canary_sentence(label) -> str:
    return canary_text(label)


@register.filter
def lookup(mapping: dict, key):
    """`mapping[key]`, or None: per-row data a view keys by id (`canaries|lookup:row.skill.pk`)."""
    return mapping.get(key)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def code_spans(text) -> str:
    """A problem message with its `code` spans as <code>: the text is escaped first, so only
    the <code> elements added here are markup."""
    escaped = str(conditional_escape(str(text)))
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escaped))  # noqa: S308 - escaped above


@register.filter
def tag_chips(tags) -> list[str]:
    """A version's tags as chips show them: versions stored before tags were read whichever
    way they were written may hold `["csv"` for `csv`."""
    return tag_list(tags or ())


VERDICT_TITLES = {
    "clean": "Scan: clean",
    "review": "Scan: worth a review (medium findings)",
    "warn": "Scan: high-severity findings",
    "malicious": "Scan: critical findings",
    "error": "Scan: the scanner could not tell",
    "": "Not scanned yet",
}


@register.simple_tag
def verdict_badge(verdict: str | None, pending: bool = False) -> str:
    """A scan verdict as a badge; none yet (or one queued) reads `scanning…`/`not scanned`."""
    verdict = verdict or ""
    text = verdict or ("scanning…" if pending else "not scanned")
    return format_html(
        '<span class="badge verdict verdict-{}" title="{}">{}</span>',
        verdict or "none",
        VERDICT_TITLES.get(verdict, verdict),
        text,
    )


@register.simple_tag
def verdict_in(scans: dict, version) -> str:
    """The badge of `version`'s newest scan in `scans` (by version id, `selectors.scans.scans_latest`)."""
    scan = scans.get(version.pk) if version is not None else None
    return verdict_badge(scan.verdict if scan is not None else "")


@register.simple_tag
def policy_value(value) -> str:
    """A label policy check's `wanted` or `got` as a person reads it: `model scripted, version 2`."""
    if isinstance(value, dict):
        return ", ".join(f"{key.replace('_', ' ')} {policy_value(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ", ".join(policy_value(item) for item in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return "—" if value is None else str(value)


@dataclass(frozen=True)
class DiffRow:
    kind: str  # hunk | add | del | ctx
    old: int | None
    new: int | None
    text: str


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@register.filter
def diff_rows(unified: str | None) -> list[DiffRow]:
    """A unified diff as rows with old/new line numbers, the way GitHub shows one."""
    rows: list[DiffRow] = []
    old = new = 0
    for line in (unified or "").splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows:
            continue
        found = _HUNK.match(line)
        if found:
            old, new = int(found.group(1)), int(found.group(2))
            rows.append(DiffRow("hunk", None, None, line))
        elif line.startswith("+"):
            rows.append(DiffRow("add", None, new, line[1:]))
            new += 1
        elif line.startswith("-"):
            rows.append(DiffRow("del", old, None, line[1:]))
            old += 1
        elif line.startswith("\\"):
            rows.append(DiffRow("hunk", None, None, line))
        else:
            rows.append(DiffRow("ctx", old, new, line[1:]))
            old += 1
            new += 1
    return rows


@register.filter
def filesize(size: int | None) -> str:
    if size is None:
        return "—"
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


@register.simple_tag(takes_context=True)
def nav_current(context, prefix: str, exact: bool = False) -> str:
    """`aria-current="page"` on the navigation link of the section being shown."""
    request = context.get("request")
    current = request.path if request else ""
    hit = current == prefix if exact else current.startswith(prefix)
    return mark_safe('aria-current="page"') if hit else ""


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


@register.filter
def duration_text(value: dt.timedelta | None) -> str:
    """A duration the way the label policy form takes it back: `7d`, `36h`, `90m` (else ISO 8601)."""
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return duration_iso_string(value)


@register.filter
def gate_for(gates: dict, key):
    """The gate of one button (`gates.production|gate_for:version.number`); None when its label
    has no policy."""
    return gates.get(key)
