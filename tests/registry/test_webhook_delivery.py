"""Webhook deliveries end to end: a change committed through the API -> a delivery row -> the
broker -> a real Celery worker -> a real loopback receiver, which verifies each signature. The
worker runs with WEBHOOK_ALLOW_PRIVATE_ADDRESSES on, since its receiver is on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from celery import current_app
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import DeliveryStatus, TokenScope, Webhook, WebhookDelivery, WebhookEvent
from registry.services.webhooks import DELIVERY_TASK, REQUEUE_AFTER
from tests.factories import make_skill_md, publish
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SECRET = "whsec-test-2f9c1d-5be07a3c"  # given, so its own UTF-8 bytes are the key


class Receiver:
    """Records every POST whose signatures (ours and Standard Webhooks') verify; `/flaky` answers
    500 to the first attempt at each event, 200 after; anything unsigned or badly signed gets 401
    and is counted apart."""

    def __init__(self) -> None:
        self.verified: list[tuple[str, dict]] = []
        self.refused = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                given = self.headers.get("X-Skill-Registry-Signature", "")
                # Standard Webhooks: base64 HMAC of "id.timestamp.body", here keyed with the given secret's bytes.
                signed = f"{self.headers['webhook-id']}.{self.headers['webhook-timestamp']}.".encode() + body
                standard = "v1," + base64.b64encode(hmac.new(SECRET.encode(), signed, hashlib.sha256).digest()).decode()
                with receiver.lock:
                    if not hmac.compare_digest(given, expected) or self.headers["webhook-signature"] != standard:
                        receiver.refused += 1
                        status = 401
                    else:
                        payload = json.loads(body)
                        seen_before = any(p["id"] == payload["id"] for _, p in receiver.verified)
                        receiver.verified.append((self.path, payload))
                        status = 500 if self.path == "/flaky" and not seen_before else 200
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def payloads(self, path: str) -> list[dict]:
        with self.lock:
            return [payload for at, payload in self.verified if at == path]


@pytest.fixture(scope="module")
def receiver():
    running = Receiver()
    yield running
    running.server.shutdown()
    running.server.server_close()


@pytest.fixture(scope="module")
def worker(worker_exits, django_db_blocker):
    process = WorkerProcess(
        extra_env={
            "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true",
            "WEBHOOK_RETRY_BASE_SECONDS": "0.2",
            "AGENT_TURN_REAPER_SECONDS": "0.5",
        }
    ).start()
    yield process
    worker_exits(process)


@pytest.fixture
def admin_api(make_token, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(list(TokenScope.values))}")
    return client


def hook(client, url: str, events: list[str]) -> int:
    response = client.post("/api/v1/webhooks", {"url": url, "events": events, "secret": SECRET}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def arrived(receiver: Receiver, path: str, count: int, worker: WorkerProcess) -> list[dict]:
    try:
        return wait_for(lambda: len(receiver.payloads(path)) >= count and receiver.payloads(path), message=path)
    except AssertionError:
        raise AssertionError("not delivered; worker output:\n" + worker.output()[-5000:]) from None


def test_changes_are_delivered_signed_by_a_worker(admin_api, receiver, worker):
    webhook_id = hook(
        admin_api, receiver.url("/all"), ["skill.published", "label.moved", "rule.changed", "skill.disabled"]
    )
    assert admin_api.post("/api/v1/skills", {"skill_md": make_skill_md("delivered")}, format="json").status_code == 201
    assert admin_api.put("/api/v1/skills/delivered/labels/production", {"version": 1}, format="json").status_code == 200
    rule = {"name": "delivered", "pattern": "deliver", "skills": ["delivered"]}
    assert admin_api.post("/api/v1/rules", rule, format="json").status_code == 201
    assert admin_api.patch("/api/v1/skills/delivered", {"enabled": False}, format="json").status_code == 200

    payloads = arrived(receiver, "/all", 4, worker)
    assert sorted(p["event"] for p in payloads) == ["label.moved", "rule.changed", "skill.disabled", "skill.published"]
    moved = next(p for p in payloads if p["event"] == "label.moved")
    assert (moved["skill"], moved["label"], moved["version"]) == ("delivered", "production", 1)
    assert moved["from_version"] is None
    assert receiver.refused == 0

    deliveries = admin_api.get(f"/api/v1/webhooks/{webhook_id}/deliveries").json()["results"]
    assert len(deliveries) == 4
    assert all(d["status"] == "delivered" and d["attempts"] == 1 and d["last_status"] == 200 for d in deliveries)
    assert {d["payload"]["id"] for d in deliveries} == {p["id"] for p in payloads}


def test_a_500_is_retried_until_acknowledged_and_never_sent_again(admin_api, receiver, worker):
    webhook_id = hook(admin_api, receiver.url("/flaky"), ["skill.published"])
    publish("flaky")

    payloads = arrived(receiver, "/flaky", 2, worker)
    assert payloads[0] == payloads[1]  # the same event, the same bytes, sent again after the 500
    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(webhook_id=webhook_id, status=DeliveryStatus.DELIVERED).first(),
        message="the delivery to be marked delivered",
    )
    assert (delivery.attempts, delivery.last_status) == (2, 200)

    # The same task message again (a redelivery) is dropped: the row is no longer pending.
    current_app.send_task(DELIVERY_TASK, args=[delivery.pk])
    publish("flaky", description="A later change, delivered after the duplicate message was handled.")
    later = arrived(receiver, "/flaky", 4, worker)
    assert [p["version"] for p in later] == [1, 1, 2, 2]


def test_a_rolled_back_change_sends_nothing(admin_api, receiver, worker):
    hook(admin_api, receiver.url("/rollback"), ["skill.published"])
    with pytest.raises(RuntimeError), transaction.atomic():
        publish("never-happened")
        raise RuntimeError("roll back")
    publish("happened")

    payloads = arrived(receiver, "/rollback", 1, worker)
    assert [p["skill"] for p in payloads] == ["happened"]
    assert all(b"never-happened" not in bytes(d.payload) for d in WebhookDelivery.objects.all())


def test_a_delivery_whose_message_was_lost_is_requeued_by_the_worker(admin_api, receiver, worker):
    """As if the broker had been down at commit: the row is there, no message carries it."""
    webhook_id = hook(admin_api, receiver.url("/lost"), ["skill.published"])
    payload = {"id": "5e1f0c4e-8d1b-4f7e-9a53-2f9e0b6f2a10", "event": "skill.published", "skill": "lost"}
    delivery = WebhookDelivery.objects.create(
        webhook=Webhook.objects.get(pk=webhook_id),
        event_id=payload["id"],
        event=WebhookEvent.SKILL_PUBLISHED,
        payload=json.dumps(payload).encode(),
    )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - 2 * REQUEUE_AFTER)

    assert arrived(receiver, "/lost", 1, worker) == [payload]
    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.DELIVERED).first(),
        message="the requeued delivery to be marked delivered",
    )
    assert delivery.attempts == 1
