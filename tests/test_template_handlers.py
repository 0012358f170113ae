"""No template carries an inline event handler (`onclick=`, htmx's `hx-on:`) or a `javascript:`
URL. The console's Content-Security-Policy runs neither, so one written anyway does nothing
without a word: a `confirm()` that never asks lets the button do its work unconfirmed. Behaviour
lives in static/js, bound to data attributes."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

# An attribute named on<event> (after whitespace, so `data-on-x` and `hx-on` are not mistaken
# for it), htmx's own inline handlers, and a javascript: URL however spaced or cased.
FORBIDDEN = re.compile(r"<[^>]*?(?:\s(on[a-z]+)\s*=|\s(hx-on)[:\-=])|(javascript\s*:)", re.IGNORECASE)


def _templates() -> list[Path]:
    apps = [Path(settings.BASE_DIR) / app / "templates" for app in ("registry", "agents")]
    folders = [Path(folder) for folder in settings.TEMPLATES[0]["DIRS"]] + apps
    return sorted(path for folder in folders if folder.is_dir() for path in folder.rglob("*.html"))


def _offences(text: str) -> list[str]:
    found = []
    for match in FORBIDDEN.finditer(text):
        group = next(index for index in (1, 2, 3) if match.group(index))
        found.append(f"line {text.count(chr(10), 0, match.start(group)) + 1}: {match.group(group)}")
    return found


def test_the_scan_finds_each_form_it_forbids_and_nothing_else():
    assert _offences('<button type="submit" onclick="return confirm(\'Sure?\')">Go</button>') == ["line 1: onclick"]
    assert _offences('<form\n  method="post"\n  onSubmit = "x()">') == ["line 3: onSubmit"]
    assert _offences('<a href="JavaScript :void(0)">x</a>') == ["line 1: JavaScript :"]
    assert _offences('<div hx-on:click="go()">') == ["line 1: hx-on"]
    assert _offences('<img src="x.png" onerror=alert(1)>') == ["line 1: onerror"]
    harmless = '<p data-on-click="x" hx-post="/x" class="button">Click on = here, or on “Promote”</p>'
    assert _offences(harmless) == []


def test_no_template_has_an_inline_handler_or_a_javascript_url():
    templates = _templates()
    assert len(templates) > 30, templates  # the scan reads the real templates folder

    offences = [
        f"{path.relative_to(settings.BASE_DIR)} {offence}"
        for path in templates
        for offence in _offences(path.read_text(encoding="utf-8"))
    ]

    assert offences == []
