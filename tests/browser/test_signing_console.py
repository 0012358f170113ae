"""Signed releases in a real headless Chromium: an author registers an ssh-ed25519 key on the
Tokens page (a bad one is refused beside the field), a version they signed says "signed by ann
(key SHA256:…)", an unsigned one says so, and an admin can make a label policy require it."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright.sync_api import expect
from skill_registry_client.attestation import publisher_envelope

from registry.models import LabelPolicy, PublisherKey
from registry.services.audit import Actor
from registry.services.skills import skill_version_publish
from registry.skillformat.bundle import bundle_from_parts
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import make_skill_md

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_register_a_key_then_see_signed_by_on_the_version_page(live_server, open_page):
    ann = user_with_role("ann", "author")
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    page = open_page("ann")

    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("#signing-keys-empty")).to_contain_text("No signing keys yet")
    # An RSA key is refused beside the field, what was typed kept.
    page.get_by_label("Key name").fill("old laptop")
    page.get_by_label("Public key").fill("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ann@old")
    page.get_by_role("button", name="Add signing key").click()
    expect(page.locator("#signing-key-form .field-error")).to_contain_text("Only ssh-ed25519 keys are accepted")
    expect(page.get_by_label("Key name")).to_have_value("old laptop")
    screenshot(page, "signing-key-refused-author")

    page.get_by_label("Key name").fill("laptop")
    page.get_by_label("Public key").fill(public.decode() + " ann@laptop")
    page.get_by_role("button", name="Add signing key").click()
    registered = PublisherKey.objects.get(user=ann)
    expect(page.locator(".flash-success")).to_contain_text(f"Added signing key laptop ({registered.keyid})")
    expect(page.locator("#signing-key-table")).to_contain_text(registered.keyid)
    expect(page.locator("#signing-key-table")).to_contain_text("ssh-ed25519")
    screenshot(page, "signing-key-added-author")

    # v1 unsigned, v2 signed by ann with that key (what `skillreg push --sign` sends).
    actor = Actor(user=ann, via="api token ci")
    skill_version_publish(bundle=bundle_from_parts(make_skill_md("signed-demo").encode(), []), actor=actor)
    second = bundle_from_parts(make_skill_md("signed-demo", body="# Demo\n\nSigned edition.\n").encode(), [])
    envelope = publisher_envelope(key, skill="signed-demo", files={"SKILL.md": _sha256(second.skill_md)})
    skill_version_publish(bundle=second, actor=actor, publisher_signature=envelope)

    page.goto(f"{live_server.url}/skills/signed-demo/?version=2")
    signed = page.locator("#signatures .signed-by-publisher")
    expect(signed).to_contain_text(f"signed by ann (key {registered.keyid})")
    expect(page.locator("#signatures .signed-by-registry")).to_contain_text("registry attestation SHA256:")
    page.locator("#signatures").scroll_into_view_if_needed()
    screenshot(page, "version-signed-by-author")
    page.goto(f"{live_server.url}/skills/signed-demo/?version=1")
    expect(page.locator("#signatures")).to_contain_text("not signed by its publisher")

    # Revoking the key keeps the record of what it signed.
    page.goto(f"{live_server.url}/tokens/")
    page.get_by_role("button", name="Revoke signing key laptop").click()
    expect(page.locator("#signing-key-table")).to_contain_text("revoked")
    page.goto(f"{live_server.url}/skills/signed-demo/?version=2")
    expect(page.locator("#signatures")).to_contain_text("key revoked since")


def test_an_admin_requires_publisher_signatures_on_a_label(live_server, open_page):
    user_with_role("root", "admin")
    page = open_page("root")
    page.goto(f"{live_server.url}/labels/policies/")
    page.get_by_label("Require the publisher's signature").check()
    page.get_by_role("button", name="Save policy").click()
    expect(page.locator("#policy-production .publisher-signature")).to_contain_text("publisher must sign")
    assert LabelPolicy.objects.get(label="production").require_publisher_signature is True
    screenshot(page, "label-policy-publisher-signature-admin")


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()
