"""Webhooks without a worker: who may manage them, which URLs are refused (SSRF) when a hook is
created and again when a delivery is attempted, which events make deliveries (none for a change
rolled back), and one attempt in-process against a loopback receiver."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import json
import socket
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import AuditLog, DeliveryStatus, Skill, WebhookDelivery
from registry.roles import ADMIN, ANALYST, AUTHOR
from registry.services import webhooks as webhooks_service
from registry.services.audit import Actor
from registry.services.labels import label_move
from registry.services.rules import rule_create
from registry.services.skills import skill_set_enabled
from registry.services.webhooks import webhook_create, webhook_deliveries_requeue, webhook_delivery_attempt
from registry.webhooks.transport import Answer, Target, address_problem, post
from tests.factories import publish, user_with_role

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]

ALL_EVENTS = ["skill.published", "label.moved", "rule.changed", "skill.enabled", "skill.disabled"]
PUBLIC = "http://93.184.215.14/hook"  # an address literal: no DNS needed, and global
GIVEN_SECRET = "a-long-enough-secret-for-hooks-9f3k"


class _Recording(BaseHTTPRequestHandler):
    """Records each POST on its server's `requests` and answers 200."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class Receiver:
    """An http.server on a free loopback port that records every request and answers 200."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
        self.server.requests = self.requests
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def bearer(make_token, scopes, user=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(scopes, user=user)}")
    return client


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "an address that is loopback"),
        ("10.1.2.3", "an address that is private"),
        ("192.168.0.10", "an address that is private"),
        ("169.254.169.254", "an address that is link-local"),
        ("::1", "an address that is loopback"),
        ("::ffff:127.0.0.1", "an IPv4-mapped address for 127.0.0.1, which is loopback"),
        ("fe80::1", "an address that is link-local"),
        ("fd00::1", "an address that is private"),
        ("0.0.0.0", "an address that is unspecified"),
        ("100.64.0.1", "an address that is not public"),
        ("93.184.215.14", None),
        ("2606:4700::1111", None),
    ],
)
def test_only_public_addresses_may_receive(address, problem):
    assert address_problem(address) == problem


def _teredo(server: str, client: str) -> str:
    """A Teredo address (RFC 4380), built here from its parts: 2001:0::/32, the server's IPv4
    address, flags and port, then the client's IPv4 address with every bit inverted."""
    inverted = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0x8000_63BF << 32) | inverted
    return str(ipaddress.IPv6Address(value))


def _6to4(ipv4: str) -> str:
    """A 6to4 address (RFC 3056): 2002::/16 followed by the IPv4 address, then a subnet and host."""
    return str(ipaddress.IPv6Address((0x2002 << 112) | (int(ipaddress.IPv4Address(ipv4)) << 80) | 1))


EMBEDDED = [
    (_6to4("127.0.0.1"), "a 6to4 address for 127.0.0.1, which is loopback"),
    (_6to4("10.0.0.1"), "a 6to4 address for 10.0.0.1, which is private"),
    (_6to4("169.254.169.254"), "a 6to4 address for 169.254.169.254, which is link-local"),
    (_6to4("93.184.215.14"), None),
    (_teredo("93.184.215.14", "127.0.0.1"), "a Teredo address (client) for 127.0.0.1, which is loopback"),
    (_teredo("93.184.215.14", "192.168.1.5"), "a Teredo address (client) for 192.168.1.5, which is private"),
    (_teredo("10.0.0.1", "93.184.215.14"), "a Teredo address (server) for 10.0.0.1, which is private"),
    (_teredo("93.184.215.14", "8.8.8.8"), None),
    ("64:ff9b::7f00:1", "a NAT64 address for 127.0.0.1, which is loopback"),
]


@pytest.mark.parametrize(("address", "problem"), EMBEDDED)
def test_6to4_and_teredo_addresses_are_judged_by_the_ipv4_address_they_carry(address, problem):
    assert address_problem(address) == problem


@pytest.mark.parametrize("address", [address for address, problem in EMBEDDED if problem])
def test_a_6to4_or_teredo_url_carrying_an_internal_address_is_refused_at_registration(make_token, address):
    response = bearer(make_token, ["webhooks:write"]).post(
        "/api/v1/webhooks", {"url": f"http://[{address}]/hook", "events": ["skill.published"]}, format="json"
    )

    assert response.status_code == 400, response.content
    assert f"resolves to {address}, {address_problem(address)}" in response.json()["fields"]["url"]
    assert not AuditLog.objects.filter(object_type="webhook").exists()


def test_a_6to4_url_carrying_a_public_address_is_accepted(make_token):
    response = bearer(make_token, ["webhooks:write"]).post(
        "/api/v1/webhooks", {"url": f"http://[{_6to4('93.184.215.14')}]/hook", "events": ["label.moved"]}, format="json"
    )

    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://10.0.0.5/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9000/",
        "http://localhost/hook",
        "http://[::ffff:127.0.0.1]/",
    ],
)
def test_it_refuses_a_url_that_resolves_to_a_non_public_address(make_token, url):
    response = bearer(make_token, ["webhooks:write"]).post(
        "/api/v1/webhooks", {"url": url, "events": ["skill.published"], "secret": "k" * 24}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "url" in response.json()["fields"]
    assert "WEBHOOK_ALLOW_PRIVATE_ADDRESSES" in response.json()["detail"]
    assert not WebhookDelivery.objects.exists() and not AuditLog.objects.filter(object_type="webhook").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://93.184.215.14/x", "events": ["skill.published"]}, "url"),
        ({"url": "http://no-such-host.invalid/x", "events": ["skill.published"]}, "url"),
        ({"url": "http://user:pw@93.184.215.14/x", "events": ["skill.published"]}, "url"),
        ({"url": PUBLIC, "events": ["skill.exploded"]}, "events"),
        ({"url": PUBLIC, "events": []}, "events"),
        ({"events": ["skill.published"]}, "url"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(make_token, body, field):
    response = bearer(make_token, ["webhooks:write"]).post("/api/v1/webhooks", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["fields"]


def test_a_hook_is_created_listed_without_its_secret_and_deleted(make_token):
    client = bearer(make_token, ["webhooks:write"])
    created = client.post(
        "/api/v1/webhooks", {"url": PUBLIC, "events": ALL_EVENTS, "secret": GIVEN_SECRET}, format="json"
    )
    assert created.status_code == 201, created.content
    hook = created.json()
    assert hook["secret"] == GIVEN_SECRET and hook["events"] == ALL_EVENTS and hook["active"] is True
    listed = client.get("/api/v1/webhooks")
    assert listed.status_code == 200
    assert [row["id"] for row in listed.json()["results"]] == [hook["id"]]
    assert GIVEN_SECRET not in listed.content.decode() and listed.json()["results"][0]["secret_hint"] == "…9f3k"
    assert client.get(f"/api/v1/webhooks/{hook['id']}/deliveries").json()["results"] == []

    assert client.delete(f"/api/v1/webhooks/{hook['id']}").status_code == 204
    assert client.get("/api/v1/webhooks").json()["results"] == []
    assert client.delete(f"/api/v1/webhooks/{hook['id']}").status_code == 404
    actions = list(AuditLog.objects.filter(object_type="webhook").values_list("action", flat=True))
    assert sorted(actions) == ["webhook.create", "webhook.delete"]


def test_a_secret_left_out_is_generated_and_shown_once(make_token):
    client = bearer(make_token, ["webhooks:write"])
    created = client.post("/api/v1/webhooks", {"url": PUBLIC, "events": ["label.moved"]}, format="json").json()
    assert len(created["secret"]) >= 32
    assert created["secret"] not in client.get("/api/v1/webhooks").content.decode()


@pytest.mark.parametrize("role", [AUTHOR, ANALYST])
def test_roles_without_webhooks_write_are_refused(role):
    client = APIClient()
    client.force_login(user_with_role(role))
    for method, path in (("get", "/api/v1/webhooks"), ("post", "/api/v1/webhooks")):
        response = getattr(client, method)(path, {"url": PUBLIC, "events": ALL_EVENTS}, format="json")
        assert response.status_code == 403 and response.json()["scope"] == "webhooks:write"


def test_an_admin_session_manages_webhooks(db):
    client = APIClient()
    client.force_login(user_with_role(ADMIN))
    assert client.post("/api/v1/webhooks", {"url": PUBLIC, "events": ALL_EVENTS}, format="json").status_code == 201


def test_the_cli_creates_a_webhooks_write_token_for_an_admin_only(capsys):
    user_with_role(ADMIN, username="boss")
    user_with_role(AUTHOR, username="ann")
    call_command("tokens", "create", "hooks", "--user", "boss", "--scopes", "webhooks:write")
    secret = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/webhooks").status_code == 200
    with pytest.raises(Exception, match="webhooks:write"):
        call_command("tokens", "create", "hooks2", "--user", "ann", "--scopes", "webhooks:write")


def _deliveries_queued(callbacks) -> list:
    """The after-commit callbacks that tell a worker about a delivery (other writes queue their own)."""
    return [callback for callback in callbacks if getattr(callback, "func", None) is webhooks_service._queue]


def _payloads() -> list[dict]:
    return [json.loads(bytes(d.payload)) for d in WebhookDelivery.objects.order_by("id")]


def test_each_change_records_its_event_for_the_hooks_that_want_it(settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    admin = user_with_role(ADMIN, username="boss")
    actor = Actor(user=admin, via="console")
    everything, _ = webhook_create(url="http://127.0.0.1:9/all", events=ALL_EVENTS, secret="x" * 24, actor=actor)
    labels_only, _ = webhook_create(url="http://127.0.0.1:9/labels", events=["label.moved"], secret="y" * 24)

    with django_capture_on_commit_callbacks() as queued:
        first = publish("hooked")
        second = publish("hooked", description="Second edition, for hooks.")
        label_move(skill=second.skill, label="production", version_number=2, actor=actor)
        rule_create(name="hooks", pattern="hook", skills=["hooked"], actor=actor)
        skill_set_enabled(skill=first.skill, enabled=False, actor=actor)
    assert len(_deliveries_queued(queued)) == 6  # five events to the first hook, the label move to the second too

    sent = _payloads()
    assert [(p["event"], p["skill"], p["version"], p["from_version"], p["label"]) for p in sent] == [
        ("skill.published", "hooked", 1, None, None),
        ("skill.published", "hooked", 2, 1, None),
        ("label.moved", "hooked", 2, None, "production"),
        ("label.moved", "hooked", 2, None, "production"),
        ("rule.changed", None, None, None, None),
        ("skill.disabled", "hooked", 2, None, None),
    ]
    assert sent[2]["id"] == sent[3]["id"] and sent[2]["actor"] == "boss" and sent[0]["actor"] == "system"
    assert sent[4]["rule"] == "hooks" and sent[4]["action"] == "created"
    assert set(sent[0]) >= {"id", "event", "skill", "version", "label", "from_version", "actor", "at"}
    assert WebhookDelivery.objects.filter(webhook=labels_only).count() == 1
    assert WebhookDelivery.objects.filter(webhook=everything).count() == 5


def test_a_rolled_back_change_records_and_queues_nothing(settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url="http://127.0.0.1:9/all", events=ALL_EVENTS, secret="x" * 24)
    with django_capture_on_commit_callbacks() as queued, pytest.raises(RuntimeError):
        with transaction.atomic():
            publish("undone")
            raise RuntimeError("roll it back")
    assert _deliveries_queued(queued) == [] and not WebhookDelivery.objects.exists()
    assert not Skill.objects.filter(name="undone").exists()


def test_a_delivery_is_signed_and_sent_once(settings, receiver):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url=f"http://127.0.0.1:{receiver.port}/in?x=1", events=ALL_EVENTS, secret="k" * 24)
    publish("signed")
    delivery = WebhookDelivery.objects.get()

    assert webhook_delivery_attempt(delivery_id=delivery.pk) is None
    assert webhook_delivery_attempt(delivery_id=delivery.pk) is None  # a duplicate message: dropped
    [request] = receiver.requests
    expected = "sha256=" + hmac.new(b"k" * 24, request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Skill-Registry-Signature"] == expected
    assert request["path"] == "/in?x=1" and request["body"] == bytes(delivery.payload)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status) == (DeliveryStatus.DELIVERED, 1, 200)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://localhost:{port}/", "loopback"),
        ("http://127.0.0.1:{port}/", "loopback"),
        ("http://[::1]:{port}/", "loopback"),
        ("http://10.20.30.40:{port}/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[2002:7f00:1::1]:{port}/", "a 6to4 address for 127.0.0.1, which is loopback"),
        ("http://[2001:0:5db8:d70e:8000:63bf:f5ff:fffe]:{port}/", "Teredo address (client) for 10.0.0.1"),
    ],
)
def test_the_address_is_checked_again_at_delivery(settings, receiver, url, problem):
    """Created while private addresses were allowed, the hook's URL is refused once they are not."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url=url.format(port=receiver.port), events=ALL_EVENTS, secret="k" * 24)
    publish("rechecked")
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False

    delivery = WebhookDelivery.objects.get()
    assert webhook_delivery_attempt(delivery_id=delivery.pk) is None  # refused: no retry
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and problem in delivery.last_error
    assert delivery.attempts == 1 and delivery.last_status is None
    assert receiver.requests == []


def test_it_connects_to_the_address_it_checked_not_to_a_new_dns_answer(settings, receiver, monkeypatch):
    """A rebinding name answers the receiver's address when checked and another one afterwards:
    the attempt resolves once and connects to the address it checked."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 1
    answers: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        if host != "hooks.example":
            return real(host, port, *args, **kwargs)
        answers.append("127.0.0.1" if not answers else "10.9.9.9")
        return real(answers[-1], port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    webhook_create(url=f"http://hooks.example:{receiver.port}/", events=ALL_EVENTS, secret="k" * 24)
    publish("rebound")
    answers.clear()

    webhook_delivery_attempt(delivery_id=WebhookDelivery.objects.get().pk)
    [request] = receiver.requests
    assert request["headers"]["Host"] == f"hooks.example:{receiver.port}" and answers == ["127.0.0.1"]


def test_a_name_that_resolves_to_a_6to4_loopback_address_at_delivery_is_not_sent(settings, receiver, monkeypatch):
    """Public when the hook was created, 6to4 for 127.0.0.1 when the delivery is attempted."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    answers = iter(["93.184.215.14", _6to4("127.0.0.1")])
    real = socket.getaddrinfo

    def moving(host, port, *args, **kwargs):
        return real(next(answers) if host == "hooks.example" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", moving)
    webhook_create(url=f"http://hooks.example:{receiver.port}/", events=ALL_EVENTS)
    publish("moved-away")

    delivery = WebhookDelivery.objects.get()
    assert webhook_delivery_attempt(delivery_id=delivery.pk) is None  # refused: no retry
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.last_status is None
    assert "a 6to4 address for 127.0.0.1, which is loopback" in delivery.last_error
    assert receiver.requests == []


def test_the_requeue_finds_lost_deliveries_and_ends_an_abandoned_last_attempt(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    webhook_create(url="http://127.0.0.1:9/", events=ALL_EVENTS, secret="k" * 24)
    for name in ("lost", "abandoned", "abandoned-last", "fresh"):
        publish(name)
    lost, abandoned, abandoned_last, fresh = WebhookDelivery.objects.order_by("id")
    long_ago = timezone.now() - dt.timedelta(hours=1)
    WebhookDelivery.objects.filter(pk=lost.pk).update(created_at=long_ago)
    WebhookDelivery.objects.filter(pk=abandoned.pk).update(
        status=DeliveryStatus.SENDING, claimed_at=long_ago, attempts=2
    )
    WebhookDelivery.objects.filter(pk=abandoned_last.pk).update(
        status=DeliveryStatus.SENDING, claimed_at=long_ago, attempts=settings.WEBHOOK_MAX_ATTEMPTS
    )

    assert webhook_deliveries_requeue() == 2
    for delivery in (lost, abandoned, abandoned_last, fresh):
        delivery.refresh_from_db()
    assert lost.status == abandoned.status == DeliveryStatus.PENDING and lost.next_attempt_at is not None
    assert abandoned_last.status == DeliveryStatus.FAILED and "last attempt" in abandoned_last.last_error
    assert fresh.next_attempt_at is None
    assert webhook_deliveries_requeue() == 0  # queued once; not again until it is overdue again


def test_https_goes_to_the_checked_address_and_verifies_the_certificate_for_the_url_s_host(tmp_path, monkeypatch):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", key, "-out", cert]
        + ["-subj", "/CN=hooks.test", "-addext", "subjectAltName=DNS:hooks.test"],
        check=True,
        capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    server.requests = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:

        def send(host: str) -> Answer:
            target = Target(scheme="https", host=host, port=port, path="/", addresses=("127.0.0.1",))
            return post(target, body=b"{}", headers={}, timeout=5)

        assert "CERTIFICATE_VERIFY_FAILED" in send("hooks.test").error  # not trusted yet
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert send("hooks.test").status == 200
        assert "Hostname mismatch" in send("other.test").error
    finally:
        server.shutdown()
        server.server_close()
