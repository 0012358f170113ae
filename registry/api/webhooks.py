"""`/api/v1/webhooks...`: signed HTTP callbacks on registry changes, and what was sent to each.

Every method needs `webhooks:write` (admins have it): a hook's URL and deliveries say where the
registry's changes go, which is no reader's business."""

from __future__ import annotations

import json

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from registry.api.base import ApiView
from registry.api.schema import errors
from registry.api.serializers import TextField
from registry.models import Webhook, WebhookDelivery, WebhookEvent
from registry.selectors.webhooks import webhook_deliveries, webhook_get, webhook_list
from registry.services.webhooks import SECRET_MAX, SECRET_MIN, URL_MAX, webhook_create, webhook_delete

WRITE = "webhooks:write"


class WebhookInputSerializer(serializers.Serializer):
    url = TextField(
        max_length=URL_MAX,
        help_text="http(s) URL of the receiver. It must resolve to public addresses only, unless the server "
        "sets WEBHOOK_ALLOW_PRIVATE_ADDRESSES (400 naming `url` otherwise).",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEvent.choices), min_length=1, max_length=len(WebhookEvent)
    )
    secret = TextField(
        required=False,
        min_length=SECRET_MIN,
        max_length=SECRET_MAX,
        trim_whitespace=False,
        help_text="Signs every delivery (HMAC-SHA256), at least 24 characters; a `whsec_` secret is a Standard "
        "Webhooks key in base64. Omitted: one is generated (32 random bytes, `whsec_`) and returned in this "
        "answer only.",
    )


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = TextField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEvent.choices))
    secret_hint = TextField(help_text="The secret's last characters; the secret itself is shown only on creation.")
    active = serializers.BooleanField()
    created_by = TextField(allow_null=True, source="created_by.username", default=None)
    created_at = serializers.DateTimeField()


class WebhookCreatedSerializer(WebhookSerializer):
    secret = TextField(
        help_text="Shown this once: keep it to verify `webhook-signature` (Standard Webhooks) or "
        "X-Skill-Registry-Signature."
    )


class WebhookDeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    event_id = serializers.UUIDField(help_text="The payload's `id`: the same for every hook the event went to.")
    event = serializers.ChoiceField(choices=WebhookEvent.choices)
    status = TextField(help_text="pending, sending, delivered or failed.")
    attempts = serializers.IntegerField()
    last_status = serializers.IntegerField(allow_null=True, help_text="The receiver's last HTTP status.")
    last_response = TextField(help_text="The start of the receiver's last answer.")
    last_error = TextField(help_text="Why the last attempt got no answer, or was not sent.")
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    delivered_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    payload = serializers.SerializerMethodField()

    def get_payload(self, delivery: WebhookDelivery) -> dict:
        """The JSON body sent (its bytes are what the signature covers)."""
        return json.loads(bytes(delivery.payload))


def _shown(webhook: Webhook) -> dict:
    return WebhookSerializer(webhook).data


class WebhookListCreateApi(ApiView):
    required_scopes = {"GET": WRITE, "POST": WRITE}

    @extend_schema(
        operation_id="webhooks_list",
        responses={200: WebhookSerializer(many=True), **errors(400, 401, 403)},
        summary="Active webhooks, newest first.",
    )
    def get(self, request):
        return self.paginated(webhook_list(), _shown)

    @extend_schema(
        operation_id="webhooks_create",
        request=WebhookInputSerializer,
        responses={201: WebhookCreatedSerializer, **errors(400, 401, 403, 413, 415)},
        summary="Send the chosen events to a URL, each POST signed with the secret.",
    )
    def post(self, request):
        body = WebhookInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        webhook, secret = webhook_create(actor=self.actor(), **body.validated_data)
        return Response({**_shown(webhook), "secret": secret}, status=status.HTTP_201_CREATED)


class WebhookDetailApi(ApiView):
    required_scopes = {"DELETE": WRITE}

    @extend_schema(
        operation_id="webhooks_delete",
        responses={204: OpenApiResponse(description="Deleted: nothing more is sent to it."), **errors(401, 403, 404)},
    )
    def delete(self, request, webhook_id: int):
        webhook_delete(webhook=webhook_get(webhook_id=webhook_id), actor=self.actor())
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveryListApi(ApiView):
    required_scopes = {"GET": WRITE}

    @extend_schema(
        operation_id="webhooks_deliveries",
        responses={200: WebhookDeliverySerializer(many=True), **errors(400, 401, 403, 404)},
        summary="The hook's deliveries, newest first: attempts, the receiver's answers, errors.",
    )
    def get(self, request, webhook_id: int):
        deliveries = webhook_deliveries(webhook=webhook_get(webhook_id=webhook_id))
        return self.paginated(deliveries, lambda delivery: WebhookDeliverySerializer(delivery).data)
