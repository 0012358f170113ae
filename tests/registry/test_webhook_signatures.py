"""Webhook secrets and signatures: a secret is generated (32 random bytes, `whsec_`, shown once)
unless one of at least 24 characters is given; each delivery carries the Standard Webhooks headers
(https://www.standardwebhooks.com) beside X-Skill-Registry-Signature. The signatures are checked
here by recomputing them from the spec, not with the registry's code; the docs' receiver
refuses an old timestamp and acts once per id."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from django.test import Client

from registry.models import AuditLog, DeliveryStatus, Webhook, WebhookDelivery
from registry.roles import ADMIN
from registry.services import webhooks
from registry.services.webhooks import webhook_create, webhook_delivery_attempt
from tests.factories import publish, user_with_role
from tests.registry.test_webhooks import ALL_EVENTS, PUBLIC, ROOT, Receiver, bearer

pytestmark = pytest.mark.django_db

WHSEC = re.compile(r"^whsec_([A-Za-z0-9+/]{43}=)$")  # 32 bytes in base64


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def spec_key(secret: str) -> bytes:
    """The Standard Webhooks reading of a secret: the base64 after `whsec_`; the registry documents
    that any other secret is its own UTF-8 bytes."""
    return base64.b64decode(secret[len("whsec_") :]) if secret.startswith("whsec_") else secret.encode()


def spec_signature(key: bytes, message_id: str, timestamp: str, body: bytes) -> str:
    signed = message_id.encode() + b"." + timestamp.encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


# --- secrets -------------------------------------------------------------------------------


def test_a_secret_left_out_is_32_random_bytes_shown_once(make_token):
    client = bearer(make_token, ["webhooks:write"])

    first = client.post("/api/v1/webhooks", {"url": PUBLIC, "events": ["label.moved"]}, format="json").json()
    second = client.post("/api/v1/webhooks", {"url": PUBLIC, "events": ["label.moved"]}, format="json").json()

    assert WHSEC.match(first["secret"]) and WHSEC.match(second["secret"]), first["secret"]
    assert len(spec_key(first["secret"])) == 32 and first["secret"] != second["secret"]
    assert Webhook.objects.get(pk=first["id"]).secret == first["secret"]
    listed = client.get("/api/v1/webhooks").content.decode()
    assert first["secret"] not in listed and second["secret"] not in listed


@pytest.mark.parametrize(
    "secret",
    [
        "k" * 23,  # one short of 24 characters
        "whsec_" + base64.b64encode(b"k" * 20).decode(),  # 28 characters, but a key of 20 bytes
        "whsec_" + "not base64 at all!!!!!",
    ],
)
def test_a_given_secret_too_weak_is_a_400_naming_secret(make_token, secret):
    response = bearer(make_token, ["webhooks:write"]).post(
        "/api/v1/webhooks", {"url": PUBLIC, "events": ["label.moved"], "secret": secret}, format="json"
    )

    assert response.status_code == 400, response.content
    assert "secret" in response.json()["fields"]
    assert not Webhook.objects.exists() and not AuditLog.objects.filter(object_type="webhook").exists()


@pytest.mark.parametrize("secret", ["k" * 24, "whsec_" + base64.b64encode(b"k" * 24).decode()])
def test_a_given_secret_of_24_characters_or_a_24_byte_key_is_kept(make_token, secret):
    response = bearer(make_token, ["webhooks:write"]).post(
        "/api/v1/webhooks", {"url": PUBLIC, "events": ["label.moved"], "secret": secret}, format="json"
    )

    assert response.status_code == 201, response.content
    assert response.json()["secret"] == secret


def test_the_console_shows_a_short_secret_refused_beside_its_field_and_a_generated_one_once():
    client = Client()
    client.force_login(user_with_role(ADMIN))
    form = {"url": PUBLIC, "events": ["label.moved"]}

    refused = client.post("/webhooks/", {**form, "secret": "short-secret"})
    created = client.post("/webhooks/", form)
    later = client.get("/webhooks/")

    assert refused.status_code == 400
    assert re.search(r'id="webhook-secret-error">[^<]*24', refused.content.decode())
    assert created.status_code == 201
    secret = Webhook.objects.get().secret
    assert WHSEC.match(secret) and f'id="new-secret">{secret}</pre>' in created.content.decode()
    assert later.status_code == 200 and secret not in later.content.decode()


# --- signatures ------------------------------------------------------------------------------


def _deliver(settings, receiver, secret: str | None) -> tuple[dict, bytes, str]:
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    _, secret = webhook_create(url=f"http://127.0.0.1:{receiver.port}/in", events=ALL_EVENTS, secret=secret)
    publish("signed")
    delivery = WebhookDelivery.objects.get()
    webhook_delivery_attempt(delivery_id=delivery.pk)
    [request] = receiver.requests
    return {name.lower(): value for name, value in request["headers"].items()}, request["body"], secret


@pytest.mark.parametrize(
    "given", [None, "a-secret-we-chose-ourselves-7f3k"], ids=["generated whsec_", "given, not whsec_"]
)
def test_a_delivery_carries_the_standard_webhooks_headers_beside_its_own(settings, receiver, given):
    before = int(time.time())
    headers, body, secret = _deliver(settings, receiver, given)
    after = int(time.time())

    delivery = WebhookDelivery.objects.get()
    assert headers["webhook-id"] == str(delivery.event_id) == str(uuid.UUID(headers["webhook-id"]))
    assert before <= int(headers["webhook-timestamp"]) <= after
    key = spec_key(secret)
    assert len(key) == (32 if given is None else len(given))
    expected = spec_signature(key, headers["webhook-id"], headers["webhook-timestamp"], body)
    assert headers["webhook-signature"] == expected
    wrong = spec_signature(secret.encode(), headers["webhook-id"], headers["webhook-timestamp"], body)
    assert (headers["webhook-signature"] == wrong) == (given is not None)  # whsec_ is decoded, others are not
    # The older header keeps its meaning: HMAC of the body keyed with the secret as written.
    assert (
        headers["x-skill-registry-signature"] == "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    )


def test_a_retry_has_the_same_id_and_a_new_timestamp_and_signature(settings, receiver, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    _, secret = webhook_create(url=f"http://127.0.0.1:{receiver.port}/in", events=ALL_EVENTS)
    publish("retried")
    delivery = WebhookDelivery.objects.get()
    webhook_delivery_attempt(delivery_id=delivery.pk)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.PENDING)  # as if it got a 500
    # The timestamp counts whole seconds: the retry is sent two seconds later by the delivery's clock.
    later = time.time() + 2
    monkeypatch.setattr(webhooks, "time", SimpleNamespace(time=lambda: later))
    webhook_delivery_attempt(delivery_id=delivery.pk)

    first, second = ({k.lower(): v for k, v in r["headers"].items()} for r in receiver.requests)
    assert first["webhook-id"] == second["webhook-id"] == str(delivery.event_id)
    assert int(second["webhook-timestamp"]) > int(first["webhook-timestamp"])
    assert first["webhook-signature"] != second["webhook-signature"]
    for headers, request in zip((first, second), receiver.requests, strict=True):
        assert headers["webhook-signature"] == spec_signature(
            spec_key(secret), headers["webhook-id"], headers["webhook-timestamp"], request["body"]
        )


# --- the docs' receiver ---------------------------------------------------------------------


def _readme_receiver(monkeypatch, secret: str) -> ThreadingHTTPServer:
    """The receiver the Webhooks page of the docs shows, run with WEBHOOK_SECRET=`secret`."""
    page = (ROOT / "docs" / "consumers" / "webhooks.md").read_text()
    monkeypatch.setenv("WEBHOOK_SECRET", secret)
    example: dict = {"__name__": "readme_receiver"}
    exec(compile(page.split("```python\n", 1)[1].split("```", 1)[0], "docs/consumers/webhooks.md", "exec"), example)
    server = ThreadingHTTPServer(("127.0.0.1", 0), example["Receiver"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def readme_server(monkeypatch):
    servers: list[ThreadingHTTPServer] = []

    def start(secret: str) -> ThreadingHTTPServer:
        servers.append(_readme_receiver(monkeypatch, secret))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("matching", [True, False])
def test_the_readme_receiver_accepts_only_deliveries_signed_with_its_secret(settings, readme_server, capsys, matching):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook, secret = webhook_create(url="http://127.0.0.1:9/", events=ALL_EVENTS)  # generated: whsec_
    server = readme_server(secret if matching else "whsec_" + base64.b64encode(b"o" * 32).decode())
    Webhook.objects.filter(pk=webhook.pk).update(url=f"http://127.0.0.1:{server.server_address[1]}/")

    publish("from-the-readme")
    delivery = WebhookDelivery.objects.get()
    webhook_delivery_attempt(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    if matching:
        assert (delivery.status, delivery.last_status) == (DeliveryStatus.DELIVERED, 204)
        assert capsys.readouterr().out == f"skill.published from-the-readme 1 None {delivery.event_id}\n"
    else:
        assert (delivery.status, delivery.last_status) == (DeliveryStatus.FAILED, 401)
        assert capsys.readouterr().out == ""


def _post(server: ThreadingHTTPServer, *, secret: str, message_id: str, timestamp: int) -> int:
    """A delivery signed here, per the spec, as the registry would send it."""
    body = json.dumps({"id": message_id, "event": "label.moved", "skill": "s", "version": 2, "label": "p"}).encode()
    stamp = str(timestamp)
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.server_address[1]}/",
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "webhook-id": message_id,
            "webhook-timestamp": stamp,
            "webhook-signature": spec_signature(spec_key(secret), message_id, stamp, body),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_readme_receiver_refuses_an_old_timestamp_and_acts_once_per_id(readme_server, capsys):
    secret = "whsec_" + base64.b64encode(b"r" * 32).decode()
    server = readme_server(secret)
    other = "whsec_" + base64.b64encode(b"x" * 32).decode()
    now = int(time.time())

    assert _post(server, secret=secret, message_id="e1", timestamp=now) == 204
    assert _post(server, secret=secret, message_id="e1", timestamp=now + 5) == 204  # a copy: not acted on again
    assert _post(server, secret=secret, message_id="e2", timestamp=now - 6 * 60) == 401  # too old: a replay
    assert _post(server, secret=secret, message_id="e3", timestamp=now + 6 * 60) == 401  # too far ahead
    assert _post(server, secret=other, message_id="e4", timestamp=now) == 401
    assert _post(server, secret=secret, message_id="e5", timestamp=now - 4 * 60) == 204

    assert capsys.readouterr().out.splitlines() == ["label.moved s 2 p e1", "label.moved s 2 p e5"]
