"""Login throttling: 10 failures in 15 minutes for a username from one IP lock that pair, 50 from
one IP across usernames lock the IP (429 with Retry-After, the right password refused too) until
the window lapses; audited; counted in the shared cache so every process sees the same counts,
and in the database without one or while it is down (tests/registry/test_login_processes.py
shows two web processes sharing the count)."""

from __future__ import annotations

import pytest
from django.test import Client

from registry.models import AuditLog, LoginCounter
from registry.services import logins
from tests.factories import UserFactory
from tests.worker import wait_for

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests"


def attempt(username: str, password: str, ip: str = "203.0.113.7"):
    return Client(REMOTE_ADDR=ip).post("/login/", {"username": username, "password": password})


def test_ten_failures_lock_the_username_even_for_the_right_password(settings):
    UserFactory(username="ada")
    answers = [attempt("ada", "wrong").status_code for _ in range(settings.LOGIN_FAILURE_LIMIT)]
    assert answers == [200] * (settings.LOGIN_FAILURE_LIMIT - 1) + [429]

    response = attempt("ada", PASSWORD)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= settings.LOGIN_FAILURE_WINDOW_SECONDS
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in response.client.session


def test_usernames_count_case_insensitively_within_the_pair():
    UserFactory(username="ada")
    for _ in range(5):
        attempt("ada", "wrong")
    for _ in range(5):
        attempt("ADA", "wrong")
    assert attempt("Ada", PASSWORD).status_code == 429


def test_an_anonymous_client_cannot_lock_the_owner_out_from_elsewhere(settings):
    """Guessing wrong as ada from one address, even past every limit, leaves ada's own address alone."""
    UserFactory(username="ada")
    for _ in range(settings.LOGIN_IP_FAILURE_LIMIT + 5):
        attempt("ada", "wrong", ip="198.51.100.66")
    assert attempt("ada", PASSWORD, ip="198.51.100.66").status_code == 429
    assert attempt("ada", PASSWORD, ip="192.0.2.99").status_code == 302


def test_spreading_guesses_over_addresses_meets_each_address_limit():
    UserFactory(username="ada")
    for n in range(10):
        for _ in range(10):
            attempt("ada", "wrong", ip=f"198.51.100.{n}")
    assert {attempt("ada", PASSWORD, ip=f"198.51.100.{n}").status_code for n in range(10)} == {429}


def test_the_address_is_locked_across_usernames_at_its_higher_limit(settings):
    UserFactory(username="bob")
    for n in range(settings.LOGIN_IP_FAILURE_LIMIT - 1):
        attempt(f"guess{n}", "wrong", ip="203.0.113.50")
    assert attempt("bob", PASSWORD, ip="203.0.113.50").status_code == 302  # one short: not yet
    attempt("guess-last", "wrong", ip="203.0.113.50")
    assert attempt("bob", PASSWORD, ip="203.0.113.50").status_code == 429
    assert attempt("bob", PASSWORD, ip="203.0.113.51").status_code == 302  # bob himself was not targeted


def test_the_lock_lapses_after_the_window(settings):
    # Few failures in a window of seconds: on a loaded machine ten requests can outlast a 1 s window.
    settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW_SECONDS = 3, 5
    UserFactory(username="ada")
    for _ in range(3):
        attempt("ada", "wrong")
    assert attempt("ada", PASSWORD).status_code == 429

    def unlocked():
        # A refused attempt counts no failure: asking until the lock lapses does not extend it.
        response = attempt("ada", PASSWORD)
        return response if response.status_code != 429 else None

    assert wait_for(unlocked, timeout=10, message="the lock to lapse").status_code == 302


def test_a_success_clears_the_username_count_below_the_limit():
    UserFactory(username="ada")
    for _ in range(9):
        attempt("ada", "wrong")
    assert attempt("ada", PASSWORD, ip="192.0.2.1").status_code == 302
    for _ in range(9):
        attempt("ada", "wrong", ip="192.0.2.2")
    assert attempt("ada", PASSWORD, ip="192.0.2.3").status_code == 302


def test_failures_and_the_lockout_are_audited():
    UserFactory(username="ada")
    for _ in range(10):
        attempt("ada", "wrong", ip="203.0.113.9")
    attempt("ada", PASSWORD, ip="203.0.113.9")
    assert AuditLog.objects.filter(action="login.failure", object_repr="ada").count() == 10
    lockout = AuditLog.objects.get(action="login.lockout")
    assert lockout.after["ip"] == "203.0.113.9" and lockout.after["locked"] == ["account"]
    assert lockout.via == "login from 203.0.113.9"


def test_the_admin_login_is_the_throttled_page():
    response = Client().get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/admin/"


def test_any_authenticate_call_is_refused_while_locked():
    """The backend, not only the page: `Client.login()` calls authenticate() directly (with a request
    that has no address, so the failures come from no address too)."""
    UserFactory(username="ada")
    for _ in range(10):
        attempt("ada", "wrong", ip="")
    assert Client().login(username="ada", password=PASSWORD) is False


def test_counts_live_in_the_shared_redis(settings):
    """Another web process sees the lock: it is in Redis itself, not in this process's memory."""
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL)")
    import redis

    UserFactory(username="ada")
    for _ in range(10):
        attempt("ada", "wrong")
    what, part, _ = logins.LoginAttempt(username="ada", ip="203.0.113.7").keys()[0]
    raw = redis.Redis.from_url(settings.REDIS_URL)
    assert raw.keys(f"*{logins._lock_key(what, part)}")


def test_a_hostile_username_is_counted_and_audited_without_a_500():
    username = "x" * 100_000 + "\u202e"
    response = attempt(username, "wrong")
    assert response.status_code == 200
    assert len(AuditLog.objects.get(action="login.failure").object_repr) <= 255


def test_with_the_cache_down_failures_are_counted_in_the_database(settings, caplog):
    """A Redis that cannot be reached (nothing listens on port 1) must not turn the throttle off."""
    settings.CACHES = {"default": {"BACKEND": "config.cache.ResilientRedisCache", "LOCATION": "redis://127.0.0.1:1/0"}}
    UserFactory(username="ada")
    answers = [attempt("ada", "wrong").status_code for _ in range(15)]
    assert answers[: settings.LOGIN_FAILURE_LIMIT - 1] == [200] * (settings.LOGIN_FAILURE_LIMIT - 1)
    assert set(answers[settings.LOGIN_FAILURE_LIMIT - 1 :]) == {429}
    assert attempt("ada", PASSWORD).status_code == 429
    assert attempt("ada", PASSWORD, ip="192.0.2.5").status_code == 302
    assert "counting in the database" in caplog.text
    assert LoginCounter.objects.filter(key__contains=":locked:account:").exists()


def test_without_redis_failures_are_counted_in_the_database(settings):
    """A cache in one process's memory would give every web process its own limit."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    UserFactory(username="ada")
    answers = [attempt("ada", "wrong").status_code for _ in range(settings.LOGIN_FAILURE_LIMIT)]
    assert answers == [200] * (settings.LOGIN_FAILURE_LIMIT - 1) + [429]
    assert LoginCounter.objects.filter(key__contains=":locked:account:").count() == 1
    assert attempt("ada", PASSWORD).status_code == 429
    assert attempt("ada", PASSWORD, ip="192.0.2.5").status_code == 302
