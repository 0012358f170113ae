"""The Content-Security-Policy in a real headless Chromium: an image that a SKILL.md body or a
model's answer points at another origin is never fetched (the skill page, the editor's live
preview, a playground answer), and every console page (each URL pattern of the console, walked
as admin, author and analyst, with an object behind each), the admin and the API docs load and
run their own styles and scripts without a single violation or script error."""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import URLResolver, get_resolver
from django.utils import timezone
from playwright.sync_api import expect

from agents.models import AgentTurn, TurnStatus
from registry.selectors import skill_get
from registry.services.evals import eval_suite_replace
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.rollouts import label_rollout_set
from registry.services.rules import rule_create
from registry.services.skillsets import skillset_publish
from registry.services.tokens import api_token_create
from registry.services.webhooks import webhook_create
from tests.agents.evals.eval_runs import SUITE, graded_run
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
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


# Each page's `securitypolicyviolation` events, logged to the console (the script is injected by
# the browser's debugging protocol, so the policy it watches does not apply to it).
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`Content Security Policy violation event: ${event.violatedDirective} blocked ${event.blockedURI}`);
});
"""


def watch_console(page) -> list[str]:
    """Every CSP violation Chromium reports on this page (it logs one per blocked load or
    script, and the page fires a `securitypolicyviolation` event), and every uncaught script
    error, as they happen (from the next navigation on)."""
    seen: list[str] = []
    page.add_init_script(REPORT_VIOLATIONS)
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


# Console URLs not walked as pages, each with why; every other console URL pattern is walked.
NOT_PAGES = {"eval-suite-export": "a JSON download (Content-Disposition: attachment), not a page"}
CONSOLE_MODULES = ("registry.console.", "agents.turns.playground", "agents.turns.console", "agents.evals.console")


def console_url_names() -> set[str]:
    """The name of every URL pattern whose view lives in a console module (registry/console/*,
    the agents app's playground, turns and evals pages), read from the project's URLconf."""

    def flatten(patterns):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from flatten(entry.url_patterns)
            else:
                yield entry

    return {
        pattern.name
        for pattern in flatten(get_resolver().url_patterns)
        if pattern.name and pattern.callback.__module__.startswith(CONSOLE_MODULES)
    }


@dataclass(frozen=True)
class Fixtures:
    rule: int
    token: int
    webhook: int
    run: str
    turn: str
    user: int


def console_fixtures(owner) -> Fixtures:
    """An object behind every console page: a skill with two versions, a file, production on v1
    and a rollout of v2, a policy, a rule, a token, a webhook, an eval suite and run, a turn."""
    publish(
        "csp-demo",
        description="One.",
        files=[("scripts/run.sh", b"echo hi\n", True)],
        body=f"# Demo\n\n![inline](data:image/png;base64,{base64.b64encode(PIXEL).decode()})\n",
    )
    skill = publish("csp-demo", description="Two.", body="# Demo\n\nSecond version.\n").skill
    label_move(skill=skill, label="production", version_number=1)
    label_rollout_set(skill=skill, label="production", version_number=2, weight=10)
    label_policy_set(label="staging", roles=["admin", "author"])
    publish("code-review", description="Review code and pull requests for bugs and security problems.")
    reviewed = skill_get(name="code-review")
    skillset_publish(name="csp-set", members={"csp-demo": 1, "code-review": 1})
    skillset_publish(name="csp-set", members={"csp-demo": 2, "code-review": 1})
    eval_suite_replace(skill=reviewed, document=SUITE)
    run = graded_run(reviewed, outcomes={"t-pr": True, "t-poem": True, "k-sql": False})
    rule = rule_create(name="csp-rule", pattern=r"\bdemo\b", skills=["csp-demo"], instruction="Use it.").rule
    token, _ = api_token_create(name="csp-token", username=owner.username, scopes=["skills:read"])
    webhook, _ = webhook_create(url="http://93.184.215.14/hooks/csp", events=["skill.published"])
    turn = AgentTurn.objects.create(
        user=owner,
        message="demo please",
        model="offline",
        status=TurnStatus.SUCCEEDED,
        answer="Done.",
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    other = user_with_role("csp-other", "analyst")
    return Fixtures(rule=rule.pk, token=token.pk, webhook=webhook.pk, run=str(run.pk), turn=str(turn.pk), user=other.pk)


def console_pages(f: Fixtures) -> dict[str, str]:
    """URL name -> the path walked (GET). A write endpoint answers a GET with the page it
    redirects to or its confirmation; a fragment is loaded on its own, as htmx would."""
    skill = "/skills/csp-demo"
    return {
        "login": "/login/",
        "home": "/",
        "analytics": "/analytics/",
        "analytics-skill": "/analytics/skills/csp-demo/",
        "audit-list": "/audit/",
        "catalog-routing": "/catalog/routing/",
        "label-policies": "/labels/policies/",
        "label-policy-save": "/labels/policies/save/",
        "label-policy-remove": "/labels/policies/staging/remove/",
        "rule-list": "/rules/",
        "rule-new": "/rules/new/",
        "rule-test": "/rules/test/?query=demo",
        "rule-pattern-check": "/rules/check/",
        "rule-detail": f"/rules/{f.rule}/",
        "rule-enabled": f"/rules/{f.rule}/enabled/",
        "rule-delete": f"/rules/{f.rule}/delete/",
        "skill-list": "/skills/",
        "skill-new": "/skills/new/",
        "skill-upload": "/skills/new/upload/",
        "skill-detail": f"{skill}/",
        "skill-edit": f"{skill}/edit/",
        "skill-versions": f"{skill}/versions/",
        "skill-rollout": f"{skill}/rollout/",
        "skill-diff": f"{skill}/diff/?from=1&to=2",
        "skill-labels": f"{skill}/labels/",
        "skill-label-gate": f"{skill}/labels/gate/?label=production&version=1",
        "skill-enabled": f"{skill}/enabled/",
        "skill-files": f"{skill}/files/",
        "skill-replace": f"{skill}/upload/",
        "skill-file": f"{skill}/files/scripts/run.sh?version=1",
        "skillset-list": "/skillsets/",
        "skillset-new": "/skillsets/new/",
        "skillset-detail": "/skillsets/csp-set/",
        "skillset-publish": "/skillsets/csp-set/publish/",
        "skillset-version": "/skillsets/csp-set/versions/1/",
        "skillset-diff": "/skillsets/csp-set/diff/?from=1&to=2",
        "skillset-labels": "/skillsets/csp-set/labels/",
        "token-list": "/tokens/",
        "token-revoke": f"/tokens/{f.token}/revoke/",
        # A signing key's add and revoke are POSTs; a GET is sent back to the tokens page.
        "publisher-key-add": "/tokens/keys/",
        "publisher-key-revoke": "/tokens/keys/1/revoke/",
        "webhook-list": "/webhooks/",
        "webhook-delete": f"/webhooks/{f.webhook}/delete/",
        "eval-suite": "/skills/code-review/evals/",
        "eval-case-save": "/skills/code-review/evals/cases/",
        "eval-case-delete": "/skills/code-review/evals/cases/delete/",
        "eval-suite-import": "/skills/code-review/evals/import/",
        "eval-suite-accept": "/skills/code-review/evals/revisions/1/accept/",
        "eval-run-start": "/skills/code-review/evals/runs/",
        "eval-run-compare": f"/evals/runs/compare/?a={f.run}&b={f.run}",
        "eval-run": f"/evals/runs/{f.run}/",
        "eval-run-live": f"/evals/runs/{f.run}/live/",
        "eval-run-cancel": f"/evals/runs/{f.run}/cancel/",
        "playground": f"/playground/?turn={f.turn}",
        "playground-versions": "/playground/versions/?forced_skill=csp-demo",
        "playground-events": f"/playground/turns/{f.turn}/events/",
        "playground-feedback": f"/playground/turns/{f.turn}/feedback/",
        "playground-cancel": f"/playground/turns/{f.turn}/cancel/",
        "playground-eval-case": f"/playground/turns/{f.turn}/eval-case/",
        "turn-list": "/turns/",
        "turn-detail": f"/turns/{f.turn}/",
        "user-list": "/users/",
        "user-role": f"/users/{f.user}/role/",
        "user-active": f"/users/{f.user}/active/",
        "user-password-link": f"/users/{f.user}/password-link/",
        "password-set": "/password/set/MQ/not-a-token/",
        "connect": "/connect/",
    }


def test_the_walk_covers_every_console_url_pattern():
    walked = set(console_pages(Fixtures(rule=1, token=1, webhook=1, run="r", turn="t", user=1)))
    assert console_url_names() == walked | set(NOT_PAGES)


@pytest.mark.parametrize("role", ["admin", "author", "analyst"])
def test_every_console_page_runs_without_a_policy_violation_for_each_role(live_server, browser, role):
    """Every console page, as each role sees it (an analyst meets the refusals): Chromium reports
    no Content-Security-Policy violation, and no script error, on any of them; then the pages'
    own scripts at work, and the confirmations only a POST reaches."""
    user = user_with_role("walker", role)
    fixtures = console_fixtures(user)
    page = new_page(browser)
    violations = watch_console(page)
    log_in(page, live_server.url, "walker")  # the login page is walked on the way in
    statuses = {}

    for name, path in console_pages(fixtures).items():
        response = page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        statuses[name] = response.status if response else None
        if page.locator(".topbar").count():  # a whole page, not a fragment
            assert_styled_and_scripted(page)
        assert violations == [], (role, path, violations)

    assert statuses["connect"] == 200
    assert statuses["user-list"] == (200 if role == "admin" else 403)
    if role == "analyst":
        assert statuses["skill-edit"] == 403 and statuses["skill-versions"] == 200
    else:
        assert statuses["skill-edit"] == 200
        # The confirmations: a rollout's Promote and a rollback, each a POST to the labels view.
        page.goto(f"{live_server.url}/skills/csp-demo/versions/")
        page.locator(".rollout[data-label=production]").get_by_role("button", name="Promote v2").click()
        expect(page.get_by_role("heading", name="Move production to v2?")).to_be_visible()
        screenshot(page, f"csp-promote-confirm-{role}")
        page.get_by_role("link", name="Cancel").click()
    page.goto(f"{live_server.url}/skills/csp-demo/versions/")
    page.wait_for_load_state("networkidle")
    screenshot(page, f"csp-walk-versions-{role}")

    # The pages' scripts do their work: the editor's live check (htmx), the search box.
    page.goto(f"{live_server.url}/skills/")
    page.keyboard.press("/")
    page.keyboard.type("csp")
    expect(page.locator("#skill-table tbody tr")).to_have_count(1)
    if role != "analyst":
        page.goto(f"{live_server.url}/skills/csp-demo/edit/")
        page.locator("[data-skill-editor]").press("Control+End")
        page.keyboard.type("\nMore text.\n")
        expect(page.locator("#live .markdown")).to_contain_text("More text.")
    assert violations == [], (role, violations)
    page.context.close()


def test_the_admin_and_the_api_docs_run_without_a_policy_violation(live_server, open_page):
    user_with_role("root", "admin")
    publish("csp-demo", description="One.")
    page = open_page("root")
    violations = watch_console(page)

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
