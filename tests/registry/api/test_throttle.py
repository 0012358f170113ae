"""API_THROTTLE_RATE: requests per token (or console user); over it, a 429 in the usual error shape.

Rates here are per day, so a test never straddles a window boundary between its requests.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from registry.api import throttle
from registry.api.rate import parse_rate
from tests.factories import publish

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> Client:
    return Client(headers={"authorization": f"Bearer {secret}"})


def test_a_token_over_its_rate_gets_429_with_retry_after_and_other_tokens_do_not(settings, make_token):
    settings.API_THROTTLE_RATE = "3/day"
    busy, other = bearer(make_token(["skills:read"])), bearer(make_token(["skills:read"]))

    assert [busy.get("/api/v1/skills").status_code for _ in range(3)] == [200, 200, 200]
    refused = busy.get("/api/v1/skills")

    assert refused.status_code == 429
    assert refused.json()["error"] == "throttled"
    assert "available in" in refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= 86400
    assert other.get("/api/v1/skills").status_code == 200


def test_the_skill_md_fast_path_counts_too(settings, make_token):
    publish()
    settings.API_THROTTLE_RATE = "2/day"
    client = bearer(make_token(["skills:read"]))

    statuses = [client.get("/api/v1/skills/demo-skill/SKILL.md").status_code for _ in range(3)]

    assert statuses == [200, 200, 429]


def test_a_console_session_is_limited_per_user(settings, admin_user):
    settings.API_THROTTLE_RATE = "1/day"
    client = Client()
    client.force_login(admin_user)

    assert client.get("/api/v1/skills").status_code == 200
    assert client.get("/api/v1/skills").status_code == 429


def test_off_means_no_limit(settings, make_token):
    settings.API_THROTTLE_RATE = "off"
    client = bearer(make_token(["skills:read"]))

    assert {client.get("/api/v1/rules").status_code for _ in range(5)} == {200}


@pytest.mark.parametrize("rate", ["often", "0/min", "10/fortnight", "-5/s", "5"])
def test_a_malformed_rate_is_a_configuration_error_naming_the_setting(rate):
    with pytest.raises(ImproperlyConfigured, match="API_THROTTLE_RATE"):
        parse_rate(rate)


@pytest.mark.parametrize(("rate", "parsed"), [("6000/min", (6000, 60)), ("10/s", (10, 1)), ("5/Hour", (5, 3600))])
def test_rates_read_as_requests_per_period(rate, parsed):
    assert parse_rate(rate) == parsed


def test_with_redis_every_process_sees_the_others_requests(settings):
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL): without it each process counts alone")
    first, second = throttle._Counts(), throttle._Counts()  # two processes' counters
    identity, window = f"test:{uuid.uuid4().hex}", int(time.time() // 86400)

    assert [first.add(identity, window, 86400, allowed=4) for _ in range(2)] == [1, 2]
    assert [second.add(identity, window, 86400, allowed=4) for _ in range(2)] == [3, 4]
    assert first.add(identity, window, 86400, allowed=4) == 5


def test_a_large_limit_is_added_to_redis_in_batches_not_per_request(settings):
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL): without it each process counts alone")
    counts = throttle._Counts()
    identity, window = f"test:{uuid.uuid4().hex}", int(time.time() // 86400)

    def seen_by_another_process() -> int:
        return throttle._Counts().add(identity, window, 86400, allowed=10_000) - 1  # its first syncs

    counts.add(identity, window, 86400, allowed=10_000)  # the first request of a window syncs
    for _ in range(50):  # under 1% of the limit: kept here unless a tenth of a second passed
        counts.add(identity, window, 86400, allowed=10_000)
    assert 1 <= seen_by_another_process() < 51  # not all 51 of ours reached Redis yet

    for _ in range(100):  # a whole batch: all of it reaches Redis
        counts.add(identity, window, 86400, allowed=10_000)
    assert seen_by_another_process() >= 101 + 1


def test_when_redis_is_down_each_process_still_counts(settings, make_token, monkeypatch):
    monkeypatch.setattr(throttle, "_COUNTS", throttle._Counts())  # its Redis back-off stays here
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    settings.API_THROTTLE_RATE = "2/day"
    client = bearer(make_token(["skills:read"]))

    assert [client.get("/api/v1/skills").status_code for _ in range(3)] == [200, 200, 429]
