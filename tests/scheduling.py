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

# Seconds each unit of 25 s or more took in a whole `make test` (three processes, on an otherwise
# idle 2-core machine, 2026-11-28; what matters is their order). The rest: see `guess`.
KNOWN_SECONDS = {
    "tests/test_readme.py": 120,
    "tests/browser/test_skills_console.py": 85,
    "tests/agents/turns/test_turn_faults.py": 75,
    f"{CSP_WALK}[author]": 75,
    "tests/faults/test_postgres_restart.py": 75,
    "tests/faults/test_sqlite_writers.py": 75,
    f"{CSP_WALK}[admin]": 60,
    "tests/agents/evals/test_model_checks_integration.py": 55,
    "tests/test_make_run_discovery.py": 55,
    f"{CSP_WALK}[analyst]": 55,
    "tests/browser/test_analytics_summaries.py": 45,
    "tests/browser/test_evals_console.py": 45,
    "tests/agents/evals/test_bundled_evals.py": 40,
    "tests/browser/test_served_and_upload_console.py": 40,
    "tests/registry/test_webhook_isolation.py": 40,
    "tests/browser/test_skill_editor.py": 35,
    "tests/browser/test_author_trust.py": 35,
    "tests/registry/test_label_rule_matrix.py": 35,
    "tests/clients/test_python_client.py": 30,
    "tests/browser/test_analytics_pages.py": 30,
    "tests/test_settings.py": 30,
    "tests/agents/evals/test_eval_faults.py": 30,
    "tests/agents/turns/test_turns_integration.py": 30,
    "tests/browser/test_tokens_audit_console.py": 30,
    "tests/browser/test_skillsets_console.py": 30,
    "tests/browser/test_scans_console.py": 25,
    "tests/browser/test_turns_console.py": 25,
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
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    measured = cache.get(CACHE_KEY, {}) if cache else {}
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
        cache = getattr(self.config, "cache", None)
        if cache is None or not self.seconds:
            return
        known = cache.get(CACHE_KEY, {})
        cache.set(CACHE_KEY, {**known, **{unit: round(s, 1) for unit, s in self.seconds.items()}})
