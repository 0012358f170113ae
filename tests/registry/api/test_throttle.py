"""API_THROTTLE_RATE: requests per token (or console user); over it, a 429 in the usual error shape.

Rates here are per day, so a test never straddles a window boundary between its requests.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from registry.api import throttle
from registry.models import ApiToken
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
        throttle.parse_rate(rate)


@pytest.mark.parametrize(("rate", "parsed"), [("6000/min", (6000, 60)), ("10/s", (10, 1)), ("5/Hour", (5, 3600))])
def test_rates_read_as_requests_per_period(rate, parsed):
    assert throttle.parse_rate(rate) == parsed


def test_with_redis_the_count_is_shared_by_every_process(settings, make_token):
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (set REDIS_URL): without it each process counts alone")
    import redis

    settings.API_THROTTLE_RATE = "100/day"
    secret = make_token(["skills:read"])
    for _ in range(2):
        assert bearer(secret).get("/api/v1/skills").status_code == 200

    token = ApiToken.objects.get(secret_hash=ApiToken.hash_secret(secret))
    keys = list(redis.Redis.from_url(settings.REDIS_URL).scan_iter(match="skill-registry:throttle:token:*"))
    ours = [key for key in keys if throttle.token_identity(token.secret_hash).encode() in key]
    assert len(ours) == 1
    assert int(redis.Redis.from_url(settings.REDIS_URL).get(ours[0])) == 2
