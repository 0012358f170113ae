"""A real headless Chromium (Debian's package) driven by Playwright against the live server."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


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


@pytest.fixture(autouse=True)
def _allow_sync_orm_with_playwright(monkeypatch):
    # Playwright's sync API runs an asyncio loop in this thread; Django would then refuse ORM calls
    # made by the test itself (creating users), which are not async-unsafe here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
