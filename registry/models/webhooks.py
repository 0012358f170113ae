"""Webhooks: the subscriptions and one row per delivery attempt of an event."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class WebhookEvent(models.TextChoices):
    SKILL_PUBLISHED = "skill.published"
    LABEL_MOVED = "label.moved"
    LABEL_ROLLED_BACK = "label.rolled_back"
    RULE_CHANGED = "rule.changed"
    SKILL_ENABLED = "skill.enabled"
    SKILL_DISABLED = "skill.disabled"
    SKILL_SCANNED = "skill.scanned"
    SKILLSET_LABEL_MOVED = "skillset.label_moved"
    CATALOG_DRIFT = "catalog.drift"


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
