"""The SKILL.md code editor in a real headless Chromium: line numbers that stay beside their
lines, the live check's problems as lint marks, search, the form still posting `skill_md`
(with and without JavaScript), no blank page after a refused huge SKILL.md, and a strict
script policy."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from registry.models import SkillVersion
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import make_skill_md, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STEPS = "# Long skill\n\n" + "\n".join(f"Step {n}: do the thing numbered {n}." for n in range(1, 200)) + "\n"

# The number the line-number gutter draws level with the editor line that shows `text`.
GUTTER_BESIDE = """(text) => {
  const line = [...document.querySelectorAll('.cm-line')].find((l) => l.textContent === text);
  if (!line) return null;
  const top = line.getBoundingClientRect().top;
  const number = [...document.querySelectorAll('.cm-lineNumbers .cm-gutterElement')]
    .find((g) => g.textContent && Math.abs(g.getBoundingClientRect().top - top) < 2);
  return number ? number.textContent : null;
}"""

GUTTER_TOP = """(number) => [...document.querySelectorAll('.cm-lineNumbers .cm-gutterElement')]
  .find((g) => g.textContent === number).getBoundingClientRect().top"""


@pytest.fixture
def author(db):
    return user_with_role("ada", "author")


def line_of(text: str, skill_md: str) -> int:
    return skill_md.split("\n").index(text) + 1


def test_line_numbers_stay_beside_their_lines_when_a_long_skill_md_scrolls(live_server, open_page, author):
    publish("long-skill", description="A long skill to scroll through.", body=STEPS)
    skill_md = SkillVersion.objects.get().skill_md
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/long-skill/edit/")
    expect(page.locator(".cm-editor")).to_be_visible()
    assert page.locator("textarea[name=skill_md]").is_hidden()  # CodeMirror took its place on screen

    page.locator(".cm-scroller").evaluate("(s) => { s.scrollTop = s.scrollHeight * 0.7; }")
    target = "Step 150: do the thing numbered 150."
    page.locator(".cm-line", has_text=target).scroll_into_view_if_needed()
    assert page.evaluate(GUTTER_BESIDE, target) == str(line_of(target, skill_md))
    last = "Step 199: do the thing numbered 199."
    page.locator(".cm-scroller").evaluate("(s) => { s.scrollTop = s.scrollHeight; }")
    expect(page.locator(".cm-line", has_text=last)).to_be_visible()
    assert page.evaluate(GUTTER_BESIDE, last) == str(line_of(last, skill_md))
    # The text scrolls inside the editor: the page itself is no taller than the window's worth.
    assert page.evaluate("document.documentElement.scrollHeight") < 1600
    screenshot(page, "editor-long-scrolled-author")


def test_a_live_check_problem_is_a_lint_mark_on_its_line_and_its_link_jumps_there(live_server, open_page, author):
    publish("lint-me", description="Checked as typed.", body=STEPS)
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/lint-me/edit/")
    expect(page.locator("#live")).to_contain_text("No problems")
    expect(page.locator(".cm-lint-marker")).to_have_count(0)

    page.locator(".cm-line", has_text="name: lint-me").click()
    page.keyboard.press("End")
    page.keyboard.type("-renamed")  # the check refuses a new name, on the name's line
    problem = page.locator("#problems li[data-line]").first
    expect(problem).to_contain_text("must stay")
    number = problem.get_attribute("data-line")
    assert number == str(line_of("name: lint-me-renamed", page.locator("textarea[name=skill_md]").input_value()))
    marker = page.locator(".cm-gutter-lint .cm-gutterElement", has=page.locator(".cm-lint-marker-error"))
    expect(marker).to_have_count(1)
    assert abs(page.evaluate(GUTTER_TOP, number) - marker.bounding_box()["y"]) < 2
    expect(page.locator(".cm-line .cm-lintRange-error")).to_have_text("name: lint-me-renamed")
    screenshot(page, "editor-lint-mark-author")

    page.locator(".cm-scroller").evaluate("(s) => { s.scrollTop = s.scrollHeight; }")
    problem.locator("a").click()  # back to the line, wherever the editor was scrolled
    expect(page.locator(".cm-lineNumbers .cm-activeLineGutter")).to_have_text(number)


def test_search_opens_with_ctrl_f_and_finds_a_line_far_down(live_server, open_page, author):
    publish("find-me", description="Searched.", body=STEPS)
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/find-me/edit/")
    page.locator("[data-skill-editor]").click()
    page.keyboard.press("Control+f")
    search = page.locator(".cm-search input[name=search]")
    expect(search).to_be_focused()
    search.press_sequentially("numbered 187.")
    search.press("Enter")
    expect(page.locator(".cm-searchMatch-selected")).to_be_visible()
    expect(page.locator(".cm-searchMatch-selected")).to_have_text("numbered 187.")
    screenshot(page, "editor-search-author")


def test_what_is_typed_in_the_editor_is_posted_as_skill_md(live_server, open_page, author):
    publish("typed", description="Typed into.")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/typed/edit/")
    page.locator(".cm-line", has_text="2. Step two.").click()
    page.keyboard.press("End")
    page.keyboard.type("\n3. Step three, typed key by key.")
    page.fill("input[name=message]", "A third step")
    page.get_by_role("button", name="Publish").click()

    expect(page.locator(".flash-success")).to_contain_text("Published typed v2")
    stored = SkillVersion.objects.get(skill__name="typed", number=2).skill_md
    assert stored == make_skill_md("typed", description="Typed into.").replace(
        "2. Step two.\n", "2. Step two.\n3. Step three, typed key by key.\n"
    )


def test_without_javascript_the_textarea_is_the_editor(live_server, browser, author):
    publish("plain", description="Edited without scripts.")
    page = new_page(browser, java_script_enabled=False)
    try:
        log_in(page, live_server.url, "ada")
        page.goto(f"{live_server.url}/skills/plain/edit/")
        editor = page.locator("[data-skill-editor]")
        assert editor.evaluate("(e) => e.tagName") == "TEXTAREA"
        editor.fill(make_skill_md("plain", description="Edited in a plain textarea."))
        page.get_by_role("button", name="Publish").click()
        expect(page.locator(".flash-success")).to_contain_text("Published plain v2")
    finally:
        page.context.close()
    assert "plain textarea" in SkillVersion.objects.get(skill__name="plain", number=2).skill_md


def test_a_refused_huge_skill_md_does_not_stretch_the_page(live_server, open_page, author, settings):
    settings.SKILL_MD_MAX_BYTES = 4000
    publish("huge", description="Grows too big.")
    page = open_page("ada")
    page.goto(f"{live_server.url}/skills/huge/edit/")
    huge = make_skill_md("huge", description="Grows too big.", body=STEPS * 3)
    page.fill("[data-skill-editor]", huge)
    page.get_by_role("button", name="Publish").click()

    expect(page.locator(".flash-error")).to_contain_text("Not published")
    assert SkillVersion.objects.filter(skill__name="huge").count() == 1
    assert page.locator("textarea[name=skill_md]").input_value() == huge  # the text is kept
    assert page.evaluate("document.documentElement.scrollHeight") < 2000
    screenshot(page, "editor-refused-huge-author")


def test_the_editor_runs_under_a_strict_script_policy_in_dark_mode(live_server, browser, author):
    """No inline script and no eval: the editor works with `script-src 'self'`."""
    publish("strict", description="Under a content security policy.", body=STEPS)
    page = new_page(browser, color_scheme="dark")
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text else None)
    policy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"

    def with_policy(route):
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-security-policy": policy})

    try:
        log_in(page, live_server.url, "ada")
        page.route("**/*", with_policy)
        page.goto(f"{live_server.url}/skills/strict/edit/")
        expect(page.locator(".cm-editor .cm-lineNumbers")).to_be_visible()
        page.locator(".cm-line", has_text="description: Under").click()
        page.keyboard.press("End")
        page.keyboard.type("\ntags: [one, two")
        expect(page.locator(".cm-lint-marker").first).to_be_visible()
        screenshot(page, "editor-dark-author")
    finally:
        page.unroute_all(behavior="ignoreErrors")
        page.context.close()
    assert not [text for text in violations if "script" in text], violations
