"""What authors read about their skills, the same on every page, in a real headless Chromium:
tags as written, a canary said one way everywhere, an editor a keyboard can enter and leave, and a
webhooks page that refreshes while a delivery is pending."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from registry.models import SkillVersion, Webhook, WebhookDelivery
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_abort, label_rollout_set
from registry.services.skills import skill_version_publish
from registry.services.webhooks import webhook_delivery_attempt
from registry.skillformat.bundle import bundle_from_parts
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CANARY_SENTENCE = "v3 serves 10% of production"


def _skill_md(name: str, fields: str) -> str:
    return f"---\nname: {name}\ndescription: A skill named {name}.\n{fields}---\n# {name}\n\n1. Do it.\n"


def _publish_text(text: str):
    return skill_version_publish(bundle=bundle_from_parts(text.encode(), []))


# --- tags ------------------------------------------------------------------------------------


def test_tags_show_as_chips_without_brackets_or_quotes_old_and_new(live_server, open_page):
    user_with_role("ada", "author")
    _publish_text(_skill_md("tagged-new", "metadata:\n  tags: [csv, data]\n"))
    old = publish("tagged-old").version
    SkillVersion.objects.filter(pk=old.pk).update(tags=['["csv"', '"data"]'])  # as stored before the fix
    page = open_page("ada")

    page.goto(f"{live_server.url}/skills/")
    for name in ("tagged-new", "tagged-old"):
        chips = page.locator("tr", has=page.get_by_role("link", name=name, exact=True)).locator(".tag")
        expect(chips).to_have_text(["csv", "data"])
    page.goto(f"{live_server.url}/skills/?tag=csv")
    expect(page.locator(".result-count")).to_contain_text("2 skills")
    page.goto(f"{live_server.url}/skills/tagged-old/")
    expect(page.locator(".tag")).to_have_text(["csv", "data"])
    screenshot(page, "tags-as-chips-author")

    page.goto(f"{live_server.url}/skills/new/")
    expect(page.locator(".cm-content")).to_contain_text("# tags: csv, data")
    expect(page.locator(".cm-line", has_text="# tags:")).to_have_count(1)
    assert (
        page.locator(".cm-line").all_inner_texts().index("metadata:")
        < [n for n, line in enumerate(page.locator(".cm-line").all_inner_texts()) if "# tags:" in line][0]
    )


# --- canary -----------------------------------------------------------------------------------


@pytest.fixture
def canary_skill():
    publish("canary-said", description="First edition.")
    publish("canary-said", description="Second edition.")
    skill = publish("canary-said", description="Third edition.").skill
    label_move(skill=skill, label="production", version_number=2)
    label_rollout_set(skill=skill, label="production", version_number=3, weight=10)
    return skill


@pytest.mark.parametrize("role", ["author", "admin"])
def test_a_canary_is_said_the_same_way_on_every_page(live_server, open_page, canary_skill, role):
    user_with_role(f"{role}-user", role)
    page = open_page(f"{role}-user")

    page.goto(f"{live_server.url}/skills/")
    row = page.locator("tr", has=page.get_by_role("link", name="canary-said", exact=True))
    badge = row.locator(".badge-canary")
    expect(badge).to_have_text("canary v3 · 10%")
    expect(badge).to_have_attribute("title", CANARY_SENTENCE)
    screenshot(page, f"canary-list-{role}")

    page.goto(f"{live_server.url}/skills/canary-said/")
    expect(page.locator("#served")).to_contain_text(CANARY_SENTENCE)
    expect(page.locator(".canary-note .badge-canary")).to_have_text("canary v3 · 10%")
    screenshot(page, f"canary-skill-page-{role}")
    page.goto(f"{live_server.url}/skills/canary-said/?version=3")
    expect(page.locator("#served")).to_contain_text("a canary; the other readers get v2")
    expect(page.locator("#served")).to_contain_text(CANARY_SENTENCE)

    page.goto(f"{live_server.url}/skills/canary-said/versions/")

    def version_row(number: int):
        return page.locator("tbody tr", has=page.get_by_role("link", name=f"v{number}", exact=True)).first

    v3 = version_row(3)
    expect(v3.locator(".badge-canary")).to_have_text("canary v3 · 10%")
    expect(version_row(2).locator(".badge-canary")).to_have_count(0)
    expect(page.locator(".rollout[data-label=production] .rollout-sentence")).to_have_text(CANARY_SENTENCE)
    history = page.locator("tr.history-rollout_start")
    expect(history).to_contain_text("rollout of v3 started at 10%")
    screenshot(page, f"canary-versions-{role}")

    label_rollout_abort(skill=canary_skill, label="production")
    page.reload()
    expect(page.locator("tr.history-abort")).to_contain_text("rollout of v3 aborted at 10%")
    expect(page.locator(".badge-canary")).to_have_count(0)
    screenshot(page, f"canary-versions-history-{role}")


# --- editor -----------------------------------------------------------------------------------

LONG = "A line long enough to need wrapping: " + "word " * 80
UNCLOSED = _skill_md("bracketed", "metadata:\n  tags: [csv, data\n  author: Ada\n")


def test_the_editor_is_reached_and_left_by_keyboard_wraps_and_explains_problems(live_server, open_page):
    user_with_role("ada", "author")
    publish("editable", body=f"# Editable\n\n{LONG}\n")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/editable/edit/")
    expect(page.locator(".cm-editor")).to_be_visible()

    # A skip link, first in the tab order after the page's own, puts the caret in the editor.
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the editor")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".cm-content")).to_be_focused()

    # The hint is visible, and what it says works: Tab indents, Esc then Tab leaves.
    hint = page.locator("#editor-keys")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("Esc, then Tab")
    page.keyboard.press("Tab")
    expect(page.locator(".cm-content")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(page.locator(".cm-content")).not_to_be_focused()

    # Long lines wrap: the editor never scrolls sideways and the line is taller than one row.
    long_line = page.locator(".cm-line", has_text="A line long enough")
    assert long_line.bounding_box()["height"] > 40
    scroller = page.locator(".cm-scroller")
    assert scroller.evaluate("(s) => s.scrollWidth <= s.clientWidth")
    screenshot(page, "editor-keyboard-wrap-author")


def test_an_unclosed_bracket_is_reported_on_its_line_with_code_spans(live_server, open_page):
    user_with_role("ada", "author")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/new/")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(UNCLOSED)

    bracket_line = UNCLOSED.split("\n").index("  tags: [csv, data") + 1
    problem = page.locator(f"#problems li[data-line='{bracket_line}']")
    expect(problem).to_contain_text("is never closed")
    expect(problem.locator("code").first).to_have_text("metadata")
    expect(problem.locator("code", has_text="[")).to_have_count(1)
    assert "accept_lenient" not in page.locator("#problems").inner_text()
    marker = page.locator(".cm-gutter-lint .cm-gutterElement", has=page.locator(".cm-lint-marker"))
    expect(marker.first).to_be_visible()

    page.get_by_role("button", name="Publish").click()
    refused = page.locator(".flash-error .problems")
    expect(refused).to_contain_text(f"line {bracket_line}:")
    expect(refused).to_contain_text("Publish as read")
    assert "accept_lenient" not in refused.inner_text()
    expect(refused.locator("code").first).to_be_visible()
    screenshot(page, "editor-unclosed-bracket-author")


# --- webhooks -------------------------------------------------------------------------------


@pytest.fixture
def receiver():
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_the_webhooks_page_hint_follows_the_setting_and_deliveries_refresh(live_server, open_page, receiver, settings):
    user_with_role("root", "admin")
    page = open_page("root")
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    page.goto(f"{live_server.url}/webhooks/")
    expect(page.locator("#webhook-url-help")).to_contain_text("Public addresses only")

    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    page.reload()
    expect(page.locator("#webhook-url-help")).to_contain_text("allows private, loopback and link-local")
    page.get_by_label("URL").fill(receiver)
    page.get_by_role("button", name="Create webhook").click()
    expect(page.locator("#new-secret")).to_be_visible()
    expect(page.locator("#hooks[hx-trigger]")).to_have_count(0)  # nothing pending: no polling

    publish("watched")
    page.goto(f"{live_server.url}/webhooks/")
    hooks = page.locator("#hooks")
    expect(hooks).to_have_attribute("hx-trigger", re.compile(r"^every "))
    expect(hooks.locator("table.deliveries tbody tr")).to_contain_text("pending")
    screenshot(page, "webhooks-pending-admin")

    delivery = WebhookDelivery.objects.get()
    with page.expect_response(lambda response: "/webhooks/" in response.url and response.status == 286):
        webhook_delivery_attempt(delivery_id=delivery.pk)  # what a worker does
    expect(hooks.locator("table.deliveries tbody tr")).to_contain_text("delivered")
    expect(page.locator("#hooks[hx-trigger]")).to_have_count(0)  # and polling has stopped
    assert Webhook.objects.count() == 1
    screenshot(page, "webhooks-delivered-admin")
