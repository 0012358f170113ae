"""Reads for webhooks: the hooks (never their secrets in full) and their deliveries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from registry.errors import NotFound
from registry.models import DeliveryStatus, Webhook, WebhookDelivery

# How many of a hook's latest deliveries the console's list shows beside it.
RECENT_DELIVERIES = 5


@dataclass(frozen=True)
class WebhookRow:
    webhook: Webhook
    recent: tuple[WebhookDelivery, ...]

    @property
    def unfinished(self) -> bool:
        """Some of its latest deliveries wait for an attempt or an answer: the console polls."""
        return any(d.status in (DeliveryStatus.PENDING, DeliveryStatus.SENDING) for d in self.recent)


def webhook_list() -> list[Webhook]:
    """Active hooks, newest first."""
    return list(Webhook.objects.filter(active=True).select_related("created_by"))


def webhook_get(*, webhook_id: int) -> Webhook:
    webhook = Webhook.objects.filter(pk=webhook_id, active=True).select_related("created_by").first()
    if webhook is None:
        raise NotFound(f"No webhook {webhook_id}.")
    return webhook


def webhook_deliveries(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """The hook's deliveries, newest first (a query, so a page reads only its own rows)."""
    return webhook.deliveries.order_by("-created_at", "-id")


def webhook_rows() -> list[WebhookRow]:
    """Each active hook with its latest deliveries, for the console: one query for the hooks and
    one for the deliveries (a window per hook, so a busy hook does not load its whole history)."""
    hooks = webhook_list()
    recent: dict[int, list[WebhookDelivery]] = {hook.pk: [] for hook in hooks}
    if hooks:
        ranked = (
            WebhookDelivery.objects.filter(webhook_id__in=recent)
            .annotate(
                rank=Window(
                    RowNumber(), partition_by=[F("webhook_id")], order_by=[F("created_at").desc(), F("id").desc()]
                )
            )
            .filter(rank__lte=RECENT_DELIVERIES)
            .order_by("webhook_id", "rank")
        )
        for delivery in ranked:
            recent[delivery.webhook_id].append(delivery)
    return [WebhookRow(webhook=hook, recent=tuple(recent[hook.pk])) for hook in hooks]
