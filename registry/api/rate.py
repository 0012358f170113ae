"""`API_THROTTLE_RATE` parsed: the registry app calls it when it starts (registry/apps.py), so a
malformed rate stops the start-up, and the throttle (registry/api/throttle.py) reads the limit
with it."""

from __future__ import annotations

from functools import cache

from django.core.exceptions import ImproperlyConfigured

_PERIODS = {
    **dict.fromkeys(("s", "sec", "second"), 1),
    **dict.fromkeys(("m", "min", "minute"), 60),
    **dict.fromkeys(("h", "hour"), 3600),
    **dict.fromkeys(("d", "day"), 86400),
}


@cache
def parse_rate(rate: str) -> tuple[int, int] | None:
    """(requests, seconds) from "6000/min"; None for "" or "off" (no limit)."""
    if rate.strip().lower() in ("", "off"):
        return None
    count, _, period = rate.strip().partition("/")
    if not count.isdigit() or int(count) < 1 or period.lower() not in _PERIODS:
        raise ImproperlyConfigured(
            f"API_THROTTLE_RATE={rate!r}: use requests/period, e.g. 6000/min (s, min, hour, day), or off."
        )
    return int(count), _PERIODS[period.lower()]
