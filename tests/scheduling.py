"""How `make test` hands the suite out to its processes (pytest-xdist, `--dist loadfile`).

A module is one unit of work: its tests share module fixtures (a worker, a live server's data) and
a Celery queue, so they run in one process, one after another. A few tests that each take a minute
on their own and share nothing but session fixtures are units of their own (RUN_APART), so that
they run beside each other instead of one after the other in one process.

Units go out longest first (the longest-processing-time rule): whichever process is free takes the
longest unit left, so the run does not end with one process working through a long module while
the others wait. A unit's length is what the last run on this machine measured (pytest's cache,
`.pytest_cache/`), else the rough figures below, else a guess from its marks.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadFileScheduling

# Each a minute or more of page walks that share only the session's browser and live server.
CSP_WALK = (
    "tests/browser/test_content_security_policy.py"
    "::test_every_console_page_runs_without_a_policy_violation_for_each_role"
)
RUN_APART = (CSP_WALK,)

# Seconds a unit took in a `make test` on a busy 2-core machine (units not listed: see `guess`).
KNOWN_SECONDS = {
    "tests/test_readme.py": 170,
    f"{CSP_WALK}[admin]": 75,
    f"{CSP_WALK}[author]": 55,
    f"{CSP_WALK}[analyst]": 55,
}

CACHE_KEY = "skill-registry/unit-seconds"


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: its module, or itself when it runs apart."""
    module = nodeid.split("::", 1)[0]
    return nodeid if nodeid.startswith(RUN_APART) else module


def guess(items: list[pytest.Item]) -> float:
    """A unit not measured yet: workers, browsers and servers make a module slow."""
    slow = sum(1 for item in items if item.get_closest_marker("integration") or item.get_closest_marker("browser"))
    return 5.0 * slow + 0.2 * len(items)


def order_longest_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sort `items` so that units come longest first, each unit's tests kept in their order."""
    measured = config.cache.get(CACHE_KEY, {}) if config.cache else {}
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(unit_of(item.nodeid), []).append(item)

    def seconds(unit: str) -> float:
        return measured.get(unit) or KNOWN_SECONDS.get(unit) or guess(units[unit])

    items[:] = [item for unit in sorted(units, key=seconds, reverse=True) for item in units[unit]]


class UnitScheduling(LoadFileScheduling):
    """`--dist loadfile`, with the tests in RUN_APART each a unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


class UnitTimes:
    """Sums each unit's setup, call and teardown times as the processes report them (in the
    controller), and keeps them in pytest's cache for the next run's order."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        unit = unit_of(report.nodeid)
        self.seconds[unit] = self.seconds.get(unit, 0.0) + report.duration

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.config.cache is None or not self.seconds:
            return
        known = self.config.cache.get(CACHE_KEY, {})
        self.config.cache.set(CACHE_KEY, {**known, **{unit: round(s, 1) for unit, s in self.seconds.items()}})
