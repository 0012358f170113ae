"""Without Redis, two web processes share the login lockout: failures are counted in the database
they share, so guesses spread over both meet LOGIN_FAILURE_LIMIT in all, not that many each."""

from __future__ import annotations

import os
import re

import httpx
import pytest
from django.conf import settings

from bench._services import Gunicorn
from tests.factories import UserFactory
from tests.worker import _database_url_for_tests

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def two_web_processes():
    env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
    env.update(DJANGO_SETTINGS_MODULE="config.test_settings", DATABASE_URL=_database_url_for_tests())
    servers = [Gunicorn(env=env, workers=1), Gunicorn(env=env, workers=1)]
    try:
        for server in servers:
            server.start(timeout=120)
        yield servers
    finally:
        for server in servers:
            server.stop()


def log_in(server: Gunicorn, password: str) -> int:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as client:
        form = client.get("/login/")
        token = CSRF.search(form.text)
        assert token, form.text[:500]
        answer = client.post(
            "/login/", data={"username": "ada", "password": password, "csrfmiddlewaretoken": token.group(1)}
        )
        return answer.status_code


def test_failures_spread_over_two_processes_lock_at_the_limit(two_web_processes):
    UserFactory(username="ada")
    limit = settings.LOGIN_FAILURE_LIMIT
    answers = [log_in(two_web_processes[n % 2], "wrong") for n in range(limit)]
    # Each process saw only half of them; the lock came at the limit across both.
    assert answers == [200] * (limit - 1) + [429]
    assert [log_in(server, PASSWORD) for server in two_web_processes] == [429, 429]
