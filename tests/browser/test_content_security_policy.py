"""The Content-Security-Policy in a real headless Chromium: an image that a SKILL.md body or a
model's answer points at another origin is never fetched (the skill page, the editor's live
preview, a playground answer), and every console page, the admin and the API docs still load
and run their own styles and scripts without a single violation."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from agents.models import AgentTurn, TurnStatus
from tests.browser.console_helpers import screenshot, user_with_role
from tests.factories import make_skill_md, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Recorder:
    """An HTTP server on another origin (the console is on localhost:<port>, this on
    127.0.0.1:<another port>) that answers every GET with a pixel and remembers the path."""

    def __init__(self) -> None:
        requests = self.requests = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.end_headers()
                self.wfile.write(PIXEL)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder():
    server = Recorder()
    yield server
    server.close()


def watch_console(page) -> list[str]:
    """Every CSP violation Chromium reports on this page (it logs one per blocked load or
    script), and every uncaught script error, as they happen."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text) if "Content Security Policy" in message.text else None)
    page.on("pageerror", lambda error: seen.append(f"uncaught: {error}"))
    return seen


def assert_styled_and_scripted(page) -> None:
    """The console's own stylesheet applied and its scripts ran."""
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") != "inline"


def test_an_external_image_in_a_skill_body_or_an_answer_is_never_fetched(live_server, open_page, recorder):
    author = user_with_role("ada", "author")
    body = f"# Tracker\n\nBefore the image.\n\n![pixel]({recorder.url}/skill-page.png)\n\nAfter the image.\n"
    publish("pixel-skill", description="A skill whose body embeds a remote image.", body=body)
    page = open_page("ada")
    violations = watch_console(page)

    page.goto(f"{live_server.url}/skills/pixel-skill/")
    page.wait_for_load_state("networkidle")
    markdown = page.locator(".markdown")
    expect(markdown).to_contain_text("After the image.")
    expect(markdown.locator(f'img[src="{recorder.url}/skill-page.png"]')).to_have_count(1)  # there, not loaded
    assert_styled_and_scripted(page)
    screenshot(page, "csp-external-image-skill-page-author")

    page.goto(f"{live_server.url}/skills/pixel-skill/edit/")
    edited = make_skill_md(
        "pixel-skill",
        description="A skill whose body embeds a remote image.",
        body=f"# Tracker\n\n![pixel]({recorder.url}/editor-preview.png)\n\nTyped in the editor.\n",
    )
    page.fill("[data-skill-editor]", edited)
    preview = page.locator("#live .markdown")
    expect(preview).to_contain_text("Typed in the editor.")
    expect(preview.locator(f'img[src="{recorder.url}/editor-preview.png"]')).to_have_count(1)
    page.wait_for_load_state("networkidle")
    assert_styled_and_scripted(page)

    turn = AgentTurn.objects.create(
        user=author,
        message="Show me the chart",
        model="offline",
        status=TurnStatus.SUCCEEDED,
        answer=f"Here it is:\n\n![chart]({recorder.url}/playground-answer.png)\n\nThat is all.",
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    page.goto(f"{live_server.url}/playground/?turn={turn.pk}")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#turn-answer")).to_contain_text("That is all.")
    expect(page.locator(f'#turn-answer img[src="{recorder.url}/playground-answer.png"]')).to_have_count(1)
    assert_styled_and_scripted(page)

    assert recorder.requests == []
    # Blocked by the policy (one report per image), not by chance: nothing else was refused.
    for name in ("skill-page.png", "editor-preview.png", "playground-answer.png"):
        assert any(f"{recorder.url}/{name}" in violation and "img-src" in violation for violation in violations), name
    assert all("img-src" in violation for violation in violations), violations


CONSOLE_PAGES = [
    "/",
    "/skills/",
    "/skills/csp-demo/",
    "/skills/csp-demo/versions/",
    "/skills/csp-demo/diff/?from=1&to=2",
    "/skills/csp-demo/edit/",
    "/skills/new/",
    "/rules/",
    "/rules/new/",
    "/rules/test/",
    "/analytics/",
    "/analytics/skills/csp-demo/",
    "/skills/csp-demo/evals/",
    "/playground/",
    "/tokens/",
    "/audit/",
]


def test_every_page_loads_its_styles_and_scripts_without_a_policy_violation(live_server, open_page):
    user_with_role("root", "admin")
    publish(
        "csp-demo",
        description="One.",
        body=f"# Demo\n\n![inline](data:image/png;base64,{base64.b64encode(PIXEL).decode()})\n",
    )
    publish("csp-demo", description="Two.", body="# Demo\n\nSecond version.\n")
    page = open_page("root")
    violations = watch_console(page)

    for path in CONSOLE_PAGES:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        assert_styled_and_scripted(page)
        assert violations == [], (path, violations)

    # The pages' scripts do their work: the editor's live check (htmx), the search box.
    page.goto(f"{live_server.url}/skills/csp-demo/edit/")
    page.locator("[data-skill-editor]").press("Control+End")
    page.keyboard.type("\nMore text.\n")
    expect(page.locator("#live .markdown")).to_contain_text("More text.")
    page.goto(f"{live_server.url}/skills/")
    page.keyboard.press("/")
    page.keyboard.type("csp")
    expect(page.locator("#skill-table tbody tr")).to_have_count(1)

    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#site-name")).to_be_visible()
    page.goto(f"{live_server.url}/admin/registry/skill/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.django") == "object"  # the admin's own scripts ran
    screenshot(page, "csp-admin-changelist")

    page.goto(f"{live_server.url}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Skill Registry API", timeout=30_000)
    expect(page.locator(".opblock").first).to_be_visible()  # the schema was fetched and drawn
    screenshot(page, "csp-api-docs")

    assert violations == [], violations
