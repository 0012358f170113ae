"""Keeping the catalog's routing report (registry/selectors/catalog_routing.py) current.

A report is stored in the shared cache under the digest of what it was computed from (the
snapshot's skills and rules at the label, the suites' newest revisions, the settings it uses), so
a stored report is never stale: a change gives new inputs, hence a new key. Beside it, the newest
report of each label, which a request for a large catalog shows (`status: computing`) while a
worker computes the current one.

After every registry change (publish, label move, enable/disable, rule change) and every suite
change, once the write commits, a recompute is queued at most once per
CATALOG_ROUTING_DEBOUNCE_SECONDS: the first change arms a key in the cache and queues the task
with that delay; the changes until it runs find the key armed and queue nothing; the task disarms
it before it reads, so a change made while it computes queues the next one. It recomputes the
labels someone asked a report for (and resolve's default), as of when it runs.

Without a shared cache (no REDIS_URL: each process has its own memory), a worker's report is of
no use to the web process, so reports are always computed in the request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import kombu.exceptions
from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache

from registry.readmodel.results import cache_namespace
from registry.selectors.catalog_routing import RoutingInputs, catalog_routing_inputs, catalog_routing_report

log = logging.getLogger(__name__)

REFRESH_TASK = "registry.tasks.catalog_routing_refresh_task"
_ARMED = "catalog-routing:armed"
_LABELS = "catalog-routing:labels"  # the labels asked about, which the worker keeps current
_LABELS_KEPT = 20
_REPORT_SECONDS = 7 * 24 * 3600
DEFAULT_LABEL = ""  # how resolve's default (no label) is kept in the labels list


def _report_key(digest: str) -> str:
    return f"catalog-routing:report:{digest}"


def _newest_key(label: str | None) -> str:
    # In the read model's namespace: after a database restore (or between tests) the newest
    # report of a label is another database's.
    return f"catalog-routing:newest:{cache_namespace()}:{label or DEFAULT_LABEL}"


def shared_cache() -> bool:
    return not isinstance(cache, LocMemCache)


@dataclass(frozen=True)
class RoutingAnswer:
    report: dict[str, Any]
    ready: bool


def catalog_routing_refresh(*, label: str | None, inputs: RoutingInputs | None = None) -> dict[str, Any]:
    """Compute the report of `label` as of now (unless one of these inputs is stored) and store it."""
    inputs = inputs or catalog_routing_inputs(label=label)
    stored = cache.get(_report_key(inputs.digest))
    if stored is not None:
        return stored
    report = catalog_routing_report(inputs)
    cache.set(_report_key(inputs.digest), report, _REPORT_SECONDS)
    cache.set(_newest_key(label), report, _REPORT_SECONDS)
    return report


def catalog_routing_current(*, label: str | None) -> RoutingAnswer:
    """The report of `label` as of now: stored, or computed here when the catalog is small (or no
    cache is shared with workers, or no worker recomputes reports); else the newest one there
    is, marked `computing`, while a worker is asked for the current one."""
    _remember(label)
    inputs = catalog_routing_inputs(label=label)
    stored = cache.get(_report_key(inputs.digest))
    if stored is not None:
        return RoutingAnswer(stored, ready=True)
    small = max(inputs.case_count, len(inputs.snapshot.skills)) <= settings.CATALOG_ROUTING_INLINE_MAX
    if small or not shared_cache() or not settings.CATALOG_ROUTING_BACKGROUND:
        return RoutingAnswer(catalog_routing_refresh(label=label, inputs=inputs), ready=True)
    catalog_routing_refresh_soon(delay=0)
    newest = cache.get(_newest_key(label))
    figures = newest if newest is not None else _empty(label)
    return RoutingAnswer({**figures, "status": "computing", "label": label}, ready=False)


def _empty(label: str | None) -> dict[str, Any]:
    return {
        "label": label,
        "generation": None,
        "digest": None,
        "computed_at": None,
        "cases": 0,
        "recall_at_1": None,
        "recall_at_5": None,
        "overlap_threshold": settings.CATALOG_OVERLAP_THRESHOLD,
        "skills": [],
        "confusions": [],
        "overlaps": [],
    }


def _remember(label: str | None) -> None:
    labels = cache.get(_LABELS) or []
    name = label or DEFAULT_LABEL
    if name not in labels:
        cache.set(_LABELS, [name, *labels][:_LABELS_KEPT], None)


def catalog_routing_labels() -> list[str | None]:
    """The labels the background recompute keeps current: those asked about, resolve's default and `production`."""
    names = dict.fromkeys([DEFAULT_LABEL, "production", *(cache.get(_LABELS) or [])])
    return [name or None for name in names]


def catalog_routing_refresh_soon(*, delay: float | None = None) -> bool:
    """Queue a recompute in `delay` seconds (CATALOG_ROUTING_DEBOUNCE_SECONDS unless given) unless
    one is queued already; True when this call queued it. Called once a change commits."""
    if not shared_cache():
        return False
    wait = settings.CATALOG_ROUTING_DEBOUNCE_SECONDS if delay is None else delay
    # Armed for longer than the wait, so a slow broker or a busy worker does not let a second
    # task through; the task disarms it when it starts.
    if not cache.add(_ARMED, 1, timeout=int(wait) + 300):
        return False
    try:
        current_app.send_task(REFRESH_TASK, kwargs={"every": True}, countdown=wait)
    except kombu.exceptions.OperationalError:
        cache.delete(_ARMED)
        log.warning("could not queue the catalog routing recompute", exc_info=True)
        return False
    return True


def catalog_routing_changed() -> None:
    """A registry or suite write committed: recompute in the background, debounced (the on-commit
    hook of registry_changed and the suite services)."""
    if settings.CATALOG_ROUTING_BACKGROUND:
        catalog_routing_refresh_soon()


def catalog_routing_refresh_queued(*, label: str | None = None, every: bool = False) -> list[str | None]:
    """The task's work. The debounced task (`every`) disarms, then queues one task per kept label
    (at 10,000 skills a report takes minutes: each label gets a task's time limit of its own,
    and workers share them); a label's task brings its report up to date. Returns the labels."""
    if not every:
        catalog_routing_refresh(label=label)
        return [label]
    cache.delete(_ARMED)
    labels = catalog_routing_labels()
    for name in labels:
        current_app.send_task(REFRESH_TASK, kwargs={"label": name})
    return labels
