"""The webhooks page in a real headless Chromium, as an admin: a refused URL explained beside its
field, a hook created with its generated secret shown once, its latest deliveries listed, and deleted after
a confirmation; an author gets neither the page nor its link."""

from __future__ import annotations

import base64
import re

import pytest
from playwright.sync_api import expect

from registry.models import AuditLog, Webhook
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_creates_watches_and_deletes_a_webhook(browser, live_server):
    user_with_role("root", "admin")
    page = new_page(browser)
    log_in(page, live_server.url, "root")

    page.get_by_role("link", name="Webhooks").click()
    expect(page.locator(".empty")).to_contain_text("No webhooks yet")
    page.get_by_label("URL").fill("http://169.254.169.254/latest/meta-data/")
    page.get_by_role("button", name="Create webhook").click()
    expect(page.locator("#webhook-url-error")).to_contain_text("link-local")
    assert not Webhook.objects.exists()

    page.get_by_label("URL").fill("http://93.184.215.14/hooks/skills")
    page.get_by_label("rule.changed").uncheck()
    page.get_by_role("button", name="Create webhook").click()  # no secret: one is generated
    expect(page.locator("#new-secret")).to_have_text(re.compile(r"^whsec_[A-Za-z0-9+/]{43}=$"))
    webhook = Webhook.objects.get()
    generated = page.locator("#new-secret").inner_text()
    assert webhook.secret == generated and len(base64.b64decode(generated.removeprefix("whsec_"))) == 32
    assert "rule.changed" not in webhook.events and webhook.created_by.username == "root"
    assert AuditLog.objects.filter(action="webhook.create", via="console").exists()
    screenshot(page, "webhooks-secret-shown-once")

    publish("watched")
    page.goto(f"{live_server.url}/webhooks/")
    expect(page.locator("#new-secret")).to_have_count(0)
    assert generated not in page.content() and generated[-4:] in page.content()  # only its hint
    row = page.locator(f"#webhook-{webhook.pk} table.deliveries tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("skill.published")
    expect(row).to_contain_text("pending")
    screenshot(page, "webhooks-admin")

    page.get_by_role("link", name="Delete the webhook to http://93.184.215.14/hooks/skills").click()
    page.get_by_role("button", name="Confirm: delete the webhook").click()
    expect(page.locator(".flash-success")).to_contain_text("nothing more is sent to it")
    expect(page.locator(".empty")).to_contain_text("No webhooks yet")
    webhook.refresh_from_db()
    assert webhook.active is False and webhook.secret == ""
    page.context.close()


def test_an_author_has_no_webhooks_page(browser, live_server):
    user_with_role("ada", "author")
    page = new_page(browser)
    log_in(page, live_server.url, "ada")
    expect(page.get_by_role("link", name="Webhooks")).to_have_count(0)
    assert page.goto(f"{live_server.url}/webhooks/").status == 403
    page.context.close()
