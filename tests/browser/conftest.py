"""A real headless Chromium (Debian's package) driven by Playwright against the live server."""

from __future__ import annotations

import os
import shutil

import pytest
from playwright.sync_api import expect

# Playwright's sync API keeps an asyncio loop running in the test thread; Django would then
# refuse the plain ORM calls that tests and database fixtures make from that thread. The
# project has no async code, so the check protects nothing here. It must be set before any
# database fixture runs, hence at import.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# An expectation waits for its condition and ends as soon as it holds. Playwright's 5 s default is
# short for a round trip through the live server (a live check, a POST and its page) when the test
# processes, their workers and Chromium share two busy cores: a passing run never waits it out.
expect.set_options(timeout=20_000)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run should have installed it")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def open_page(browser, live_server):
    """open_page(username) -> a logged-in console page in a fresh browser context (closed afterwards)."""
    from tests.browser.console_helpers import log_in, new_page

    contexts = []

    def open_as(username: str):
        page = new_page(browser)
        contexts.append(page.context)
        log_in(page, live_server.url, username)
        return page

    yield open_as
    for context in contexts:
        context.close()
