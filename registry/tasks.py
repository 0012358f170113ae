"""The registry's Celery tasks: they take ids and call a service (STYLE.md)."""

from __future__ import annotations

from celery import shared_task

from registry.selectors.rollouts import rollouts_guarded_ids
from registry.services.catalog_routing import catalog_routing_refresh_queued
from registry.services.rollouts import label_rollout_guard
from registry.services.scans import scan_run, scans_requeue, versions_rescan
from registry.services.webhooks import webhook_attempt_limit, webhook_delivery_attempt


# The retry limit is the delivery row's (WEBHOOK_MAX_ATTEMPTS): the service says when to stop.
# The soft limit ends an attempt that a receiver drags out; the service records it as a failed try.
@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,
    soft_time_limit=webhook_attempt_limit(),
    time_limit=webhook_attempt_limit() + 10,
)
def webhook_delivery_send_task(self, delivery_id: int) -> None:
    wait = webhook_delivery_attempt(delivery_id=delivery_id)
    if wait is not None:
        raise self.retry(countdown=wait)


@shared_task
def label_rollouts_guard_task() -> list[int]:
    """Beat's periodic check of every active rollout whose label policy has a guard; returns the
    ids of the labels it rolled back. Idempotent: a rolled-back rollout is no longer active."""
    return [label_id for label_id in rollouts_guarded_ids() if label_rollout_guard(label_id=label_id).rolled_back]


@shared_task
def catalog_routing_refresh_task(label: str | None = None, every: bool = False) -> list[str | None]:
    """The catalog's routing report of `label` brought up to date, or (`every`, the debounced
    recompute) one such task queued per label kept current (registry/services/catalog_routing.py).
    Idempotent: a report already stored for the current inputs is not computed again."""
    return catalog_routing_refresh_queued(label=label, every=every)


# The scanner is killed at SCAN_TIMEOUT_SECONDS by the service; the task's own limits only catch
# a service that hangs outside the scanner. Idempotent: the service claims the queued row.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def version_scan_task(scan_id: int) -> str | None:
    scan = scan_run(scan_id=scan_id)
    return scan.verdict if scan is not None else None


@shared_task
def versions_rescan_task() -> int:
    """Beat's rescan: what labels serve, when the scanner or its rules changed; and scans that
    were never sent (the broker was down). Returns how many scans it queued."""
    return len(versions_rescan()) + scans_requeue()
