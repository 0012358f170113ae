"""Helpers for console browser tests: users with roles, logging in, screenshots."""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth.models import Group

from tests.factories import UserFactory

# CI keeps this folder as an artifact; .ci/run prints where it is.
SCREENSHOTS = (
    Path(os.environ.get("TEST_OUTPUT_DIR", Path(__file__).resolve().parents[2] / "test-output")) / "screenshots"
)
VIEWPORT = {"width": 1440, "height": 900}


def user_with_role(username: str, role: str):
    user = UserFactory(username=username)
    if role == "admin":
        user.is_superuser = user.is_staff = True
        user.save(update_fields=["is_superuser", "is_staff"])
    else:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def new_page(browser, **options):
    context = browser.new_context(viewport=VIEWPORT, **options)
    return context.new_page()


def log_in(page, base_url: str, username: str, password: str = "pw-for-tests") -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{name}.png"
    page.evaluate("window.scrollTo(0, 0)")  # a scrolled page draws its sticky header mid-picture
    page.screenshot(path=str(target), full_page=True)
    return target
