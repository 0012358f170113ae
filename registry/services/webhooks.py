"""Webhooks: create and delete hooks, record an event for every hook that wants it, and make one
delivery attempt (what the Celery task runs).

An event is recorded inside the transaction of the change it reports (a publish, a label move, a
rule write, enable/disable): its delivery rows commit with the change or not at all, and a worker
is told about them only once it committed, so a rolled-back change sends nothing. Each row is
claimed with a conditional update before an attempt and marked delivered on a 2xx, so a row is
never sent again once acknowledged, however often its task message arrives.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import secrets
import time
import uuid
from functools import partial
from typing import Any

import kombu.exceptions
from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from registry.errors import ApplicationError
from registry.models import DeliveryStatus, Webhook, WebhookDelivery, WebhookEvent
from registry.services.audit import SYSTEM, Actor, audit_record
from registry.webhooks.transport import (
    STANDARD_SECRET_PREFIX,
    Answer,
    UnresolvableHost,
    UnusableUrl,
    post,
    signature_headers,
    standard_key,
    target_check,
)

logger = logging.getLogger(__name__)

# Named rather than imported: registry/tasks.py calls into this module, and the dependency stays one way.
DELIVERY_TASK = "registry.tasks.webhook_delivery_send_task"
SECRET_MAX = Webhook._meta.get_field("secret").max_length or 256
SECRET_MIN = 24  # characters given; bytes of a given whsec_ key (Standard Webhooks asks 24 to 64)
GENERATED_SECRET_BYTES = 32
URL_MAX = Webhook._meta.get_field("url").max_length or 2000


def _clean_events(events: Any) -> list[str]:
    if not isinstance(events, list | tuple) or not events or not all(isinstance(e, str) for e in events):
        raise ApplicationError(
            "Give the events to send as a non-empty list.",
            fields={"events": f"choose from {', '.join(WebhookEvent.values)}"},
        )
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if unknown:
        raise ApplicationError(
            f"Unknown events: {', '.join(unknown)}.", fields={"events": f"choose from {', '.join(WebhookEvent.values)}"}
        )
    return [event for event in WebhookEvent.values if event in events]


def _clean_secret(secret: str | None) -> str:
    """The secret given, or a generated one: 32 random bytes as a Standard Webhooks `whsec_`
    secret, which its libraries take as is. A given one is long enough not to be guessed; a
    given `whsec_` one must carry a key of that size."""
    if secret is None or secret == "":
        return STANDARD_SECRET_PREFIX + base64.b64encode(secrets.token_bytes(GENERATED_SECRET_BYTES)).decode("ascii")
    if not isinstance(secret, str) or not SECRET_MIN <= len(secret) <= SECRET_MAX:
        raise ApplicationError(
            f"A secret is {SECRET_MIN}-{SECRET_MAX} characters; leave it out to have one generated.",
            fields={"secret": f"{SECRET_MIN}-{SECRET_MAX} characters"},
        )
    if secret.startswith(STANDARD_SECRET_PREFIX):
        key = standard_key(secret)
        if key is None or len(key) < SECRET_MIN:
            raise ApplicationError(
                f"A secret starting with {STANDARD_SECRET_PREFIX} is a key of at least {SECRET_MIN} bytes in base64.",
                fields={"secret": f"{STANDARD_SECRET_PREFIX} and at least {SECRET_MIN} bytes in base64"},
            )
    return secret


def webhook_url_check(*, url: str) -> str:
    """The URL, if it can receive webhooks now: http(s), resolving only to public addresses
    unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES is on."""
    if not isinstance(url, str) or not url or len(url) > URL_MAX:
        raise ApplicationError(f"Give the receiver's URL (at most {URL_MAX} characters).", fields={"url": "required"})
    try:
        target_check(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES)
    except UnusableUrl as error:
        raise ApplicationError(str(error), fields={"url": str(error)}) from None
    return url


def webhook_create(
    *, url: str, events: list[str], secret: str | None = None, actor: Actor = SYSTEM
) -> tuple[Webhook, str]:
    """A new hook and its secret (generated when none is given). The secret is returned here
    only: reads show its last characters."""
    events = _clean_events(events)
    secret = _clean_secret(secret)
    url = webhook_url_check(url=url)
    with transaction.atomic():
        webhook = Webhook.objects.create(url=url, events=events, secret=secret, created_by=actor.user_or_none)
        audit_record(
            actor=actor,
            action="webhook.create",
            object_type="webhook",
            object_repr=f"{webhook.pk} {url}",
            after={"url": url, "events": events},
        )
    return webhook, secret


def webhook_delete(*, webhook: Webhook, actor: Actor = SYSTEM) -> None:
    """Deactivate the hook and forget its secret; deliveries waiting for an attempt are dropped.
    The rows stay, as the record of what was sent."""
    with transaction.atomic():
        changed = Webhook.objects.filter(pk=webhook.pk, active=True).update(active=False, secret="")
        if not changed:
            return
        WebhookDelivery.objects.filter(webhook_id=webhook.pk, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.FAILED, last_error="The webhook was deleted.", next_attempt_at=None
        )
        audit_record(
            actor=actor,
            action="webhook.delete",
            object_type="webhook",
            object_repr=f"{webhook.pk} {webhook.url}",
            before={"url": webhook.url, "events": webhook.events},
        )


def _actor_name(actor: Actor) -> str:
    user = actor.user_or_none
    return user.get_username() if user is not None else actor.via


def webhook_event_emit(
    *,
    event: WebhookEvent,
    actor: Actor,
    skill: str | None = None,
    version: int | None = None,
    label: str | None = None,
    from_version: int | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Record `event` for every active hook that wants it. Call inside the transaction of the
    change; workers are told after it commits. One event id for all hooks: a receiver that
    gets an event twice (a retry after a lost answer) recognises it by `id`."""
    hooks = [hook for hook in Webhook.objects.filter(active=True).only("id", "events") if event in hook.events]
    if not hooks:
        return
    event_id = uuid.uuid4()
    payload = {
        "id": str(event_id),
        "event": str(event),
        "skill": skill,
        "version": version,
        "label": label,
        "from_version": from_version,
        "actor": _actor_name(actor),
        "at": timezone.now().isoformat().replace("+00:00", "Z"),
        **(extra or {}),
    }
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(webhook=hook, event_id=event_id, event=event, payload=body) for hook in hooks
    )
    for delivery in deliveries:
        transaction.on_commit(partial(_queue, delivery.pk))


def _queue(delivery_id: int) -> None:
    """Tell a worker. With the broker down the row stays pending; `webhook_deliveries_requeue` finds it."""
    try:
        current_app.send_task(DELIVERY_TASK, args=[delivery_id])
    except kombu.exceptions.OperationalError:
        logger.warning("could not queue webhook delivery %s", delivery_id, exc_info=True)


def _lease() -> dt.timedelta:
    """How long a claimed attempt may take before another worker may take the row over (its worker
    died): the attempt's timeouts, with room to spare."""
    return dt.timedelta(seconds=webhook_attempt_limit() + 30)


# A pending delivery whose attempt has been due this long has lost its message (the broker was down
# when it was sent, or a worker lost the retry it held): it is queued again.
REQUEUE_AFTER = dt.timedelta(seconds=60)
REQUEUE_BATCH = 500


def webhook_deliveries_requeue() -> int:
    """Queue again the deliveries no message carries any more: pending ones overdue by
    REQUEUE_AFTER, and ones whose attempt's worker died (claimed longer ago than the lease, past
    the task's hard time limit), which become pending again, or failed after their last attempt.
    Each gets a new due time, so a slow queue is not flooded with copies round after round; a
    copy that does arrive twice is dropped by the claim. Run by every worker's reaper round.
    Returns how many were queued."""
    now = timezone.now()
    overdue = now - REQUEUE_AFTER
    abandoned = WebhookDelivery.objects.filter(status=DeliveryStatus.SENDING, claimed_at__lt=now - _lease())
    abandoned.filter(attempts__gte=settings.WEBHOOK_MAX_ATTEMPTS).update(
        status=DeliveryStatus.FAILED, last_error="The worker stopped during the last attempt.", claimed_at=None
    )
    abandoned.update(status=DeliveryStatus.PENDING, claimed_at=None, next_attempt_at=overdue)
    ids = list(
        WebhookDelivery.objects.filter(
            Q(next_attempt_at__lte=overdue) | Q(next_attempt_at__isnull=True, created_at__lt=overdue),
            status=DeliveryStatus.PENDING,
            webhook__active=True,
        )
        .order_by("pk")
        .values_list("pk", flat=True)[:REQUEUE_BATCH]
    )
    WebhookDelivery.objects.filter(pk__in=ids).update(next_attempt_at=now)
    for delivery_id in ids:
        _queue(delivery_id)
    return len(ids)


def webhook_delivery_claim(*, delivery_id: int) -> WebhookDelivery | None:
    """Take the row for one attempt, or None when it is not ours to send: delivered, failed, or
    being sent by a live attempt (this task message is a duplicate or a late redelivery)."""
    now = timezone.now()
    claimable = Q(status=DeliveryStatus.PENDING) | Q(status=DeliveryStatus.SENDING, claimed_at__lt=now - _lease())
    claimed = WebhookDelivery.objects.filter(claimable, pk=delivery_id, webhook__active=True).update(
        status=DeliveryStatus.SENDING, claimed_at=now, attempts=F("attempts") + 1
    )
    if not claimed:
        return None
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)


def _retry_wait(attempts: int) -> float:
    return min(settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempts - 1), settings.WEBHOOK_RETRY_MAX_SECONDS)


def _record(*, delivery: WebhookDelivery, answer: Answer, retry: bool) -> float | None:
    """Store the attempt's answer on the row we claimed; the wait before the next attempt, if any."""
    now = timezone.now()
    fields: dict[str, Any] = {
        "last_status": answer.status,
        "last_response": answer.body,
        "last_error": answer.error,
        "claimed_at": None,
    }
    wait = None
    if answer.acknowledged:
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=now, next_attempt_at=None)
    elif retry and delivery.attempts < settings.WEBHOOK_MAX_ATTEMPTS:
        wait = _retry_wait(delivery.attempts)
        fields.update(status=DeliveryStatus.PENDING, next_attempt_at=now + dt.timedelta(seconds=wait))
    else:
        fields.update(status=DeliveryStatus.FAILED, next_attempt_at=None)
    ours = WebhookDelivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.SENDING, claimed_at=delivery.claimed_at)
    ours.update(**fields)
    return wait


def webhook_delivery_attempt(*, delivery_id: int) -> float | None:
    """One attempt at a delivery: claim, check the address again (DNS may have changed since the
    hook was created), POST the signed payload, record the answer. Returns the seconds to wait
    before the next attempt when there should be one, else None."""
    delivery = webhook_delivery_claim(delivery_id=delivery_id)
    if delivery is None:
        logger.info("webhook delivery %s is not pending; dropping this message", delivery_id)
        return None
    body = bytes(delivery.payload)
    try:
        target = target_check(delivery.webhook.url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES)
    except UnusableUrl as error:
        # Unresolvable now may resolve later; an address that is not public will not become one
        # by waiting, and trying again would only knock on the internal door again.
        return _record(
            delivery=delivery,
            answer=Answer(status=None, error=f"Not sent: {error}"),
            retry=isinstance(error, UnresolvableHost),
        )
    headers = {
        **signature_headers(
            secret=delivery.webhook.secret, message_id=str(delivery.event_id), timestamp=int(time.time()), body=body
        ),
        "User-Agent": "skill-registry-webhooks",
        "X-Skill-Registry-Event": delivery.event,
        "X-Skill-Registry-Delivery": str(delivery.event_id),
    }
    try:
        answer = post(target, body=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)
    except SoftTimeLimitExceeded:  # a receiver that trickles its answer: each read is within the timeout
        answer = Answer(status=None, error=f"No complete answer within {webhook_attempt_limit():.0f} s.")
    return _record(delivery=delivery, answer=answer, retry=answer.transient)


def webhook_attempt_limit() -> float:
    """Seconds one attempt may take in all (the task's soft time limit): the per-read timeout
    bounds each wait, this bounds their sum."""
    return 3 * settings.WEBHOOK_TIMEOUT_SECONDS + 5
