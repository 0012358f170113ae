"""The two pages an anonymous visitor may see, and that everything else needs a login."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_cache_and_broker(client):
    response = client.get("/healthz")

    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert {"database", "cache", "broker"} <= body.keys()
    assert all(body[part]["ok"] for part in ("database", "cache", "broker"))


def test_healthz_says_503_and_names_the_broken_part(client, settings):
    from config.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = original

    assert response.status_code == 503
    assert response.json()["broker"]["ok"] is False
    assert response.json()["database"]["ok"] is True


def test_login_page_is_public_and_the_dashboard_is_not(client):
    assert client.get("/login/").status_code == 200
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_user_can_log_in_and_see_the_dashboard(client):
    from tests.factories import user_with_role

    user_with_role("analyst", username="ada")
    response = client.post("/login/", {"username": "ada", "password": "pw-for-tests"}, follow=True)

    assert response.status_code == 200
    assert b"Dashboard" in response.content


def test_a_user_without_a_role_is_told_so_and_who_can_grant_one(client):
    from tests.factories import UserFactory, user_with_role

    user_with_role("admin", username="root", email="root@example.com")
    UserFactory(username="ada")
    response = client.post("/login/", {"username": "ada", "password": "pw-for-tests"}, follow=True)

    assert response.status_code == 200
    assert b"Your account has no role yet" in response.content
    assert b'<a href="mailto:root@example.com">' in response.content
    assert b"Dashboard" not in response.content  # no navigation to pages that would refuse
    refused = client.get("/rules/")
    assert refused.status_code == 403 and b"Your account has no role yet" in refused.content


def test_login_requires_the_csrf_token():
    from django.test import Client

    from tests.factories import UserFactory

    UserFactory(username="ada")
    response = Client(enforce_csrf_checks=True).post("/login/", {"username": "ada", "password": "pw-for-tests"})
    assert response.status_code == 403


def test_the_favicon_is_served(client):
    from django.contrib.staticfiles import finders
    from django.templatetags.static import static

    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == static("favicon.svg")
    assert b"<svg" in open(finders.find("favicon.svg"), "rb").read()


def test_a_page_beyond_the_role_says_why_inside_the_console(client):
    from registry.roles import ANALYST
    from tests.factories import user_with_role

    client.force_login(user_with_role(ANALYST, username="ana"))
    response = client.get("/skills/new/")
    html = response.content.decode()
    assert response.status_code == 403
    assert 'class="topbar"' in html and "You don't have access to this page" in html
    assert "ana" in html and "analyst" in html and "author role" in html


def test_a_missing_page_is_a_console_page_too(client):
    from registry.roles import ANALYST
    from tests.factories import user_with_role

    client.force_login(user_with_role(ANALYST))
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "There is nothing at this address" in response.content.decode()


def test_an_author_opening_the_admin_is_told_who_they_are_not_shown_a_bare_login_form(client):
    from registry.roles import AUTHOR
    from tests.factories import user_with_role

    client.force_login(user_with_role(AUTHOR, username="ann"))
    response = client.get("/admin/", follow=True)
    html = response.content.decode()
    assert response.status_code == 200 and "/login/" in response.redirect_chain[-1][0]
    assert "You are logged in as <b>ann</b>" in html and "the Django admin is for admins" in html
