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

# Seconds each unit of 25 s or more took in a whole `make test` (three processes, on a 2-core
# machine that other work shared; what matters is their order). The rest: see `guess`.
KNOWN_SECONDS = {
    "tests/registry/test_label_rule_matrix.py": 235,
    "tests/agents/evals/test_bundled_evals.py": 130,
    "tests/test_readme.py": 120,
    "tests/registry/api/test_fuzz_api.py": 115,
    "tests/agents/turns/test_turn_faults.py": 110,
    "tests/agents/turns/test_store.py": 105,
    "tests/registry/console/test_skill_pages.py": 105,
    "tests/faults/test_sqlite_writers.py": 100,
    "tests/browser/test_skills_console.py": 95,
    "tests/registry/api/test_auth_api.py": 90,
    "tests/registry/api/test_rollouts_api.py": 90,
    "tests/test_security_headers.py": 85,
    "tests/registry/test_analytics.py": 80,
    "tests/registry/test_snapshot_delta.py": 80,
    "tests/agents/turns/test_model_allowlist.py": 65,
    "tests/faults/test_postgres_restart.py": 65,
    "tests/registry/console/test_rule_pages.py": 65,
    "tests/registry/test_login_throttle.py": 65,
    "tests/agents/turns/test_turns_integration.py": 60,
    f"{CSP_WALK}[admin]": 55,
    "tests/agents/evals/test_evals_integration.py": 55,
    f"{CSP_WALK}[analyst]": 50,
    f"{CSP_WALK}[author]": 50,
    "tests/agents/evals/test_eval_faults.py": 50,
    "tests/registry/api/test_label_policies_api.py": 45,
    "tests/browser/test_served_and_upload_console.py": 40,
    "tests/browser/test_skill_editor.py": 40,
    "tests/agents/evals/test_evals_console.py": 40,
    "tests/browser/test_analytics_pages.py": 40,
    "tests/agents/evals/test_label_policy_integration.py": 40,
    "tests/clients/test_python_client.py": 40,
    "clients/python/tests/test_skill_registry_client.py": 40,
    "tests/registry/mcp/test_mcp_endpoint.py": 35,
    "tests/registry/console/test_lenient_publish_pages.py": 35,
    "tests/faults/test_redis_outage.py": 35,
    "tests/registry/test_readmodel.py": 35,
    "tests/registry/api/test_discovery_api.py": 35,
    "tests/browser/test_rules_console.py": 35,
    "tests/registry/test_usage_skill_identity.py": 35,
    "tests/browser/test_tokens_audit_console.py": 30,
    "tests/registry/test_matching_index.py": 30,
    "tests/browser/test_playground_console.py": 30,
    "tests/registry/api/test_skills_api.py": 30,
    "tests/registry/test_cli_users.py": 30,
    "tests/browser/test_label_policies_console.py": 30,
    "tests/browser/test_turns_console.py": 30,
    "tests/registry/test_change_listener.py": 30,
    "tests/agents/turns/test_turn_list_api.py": 30,
    "tests/test_settings.py": 25,
    "tests/registry/api/test_unavailable.py": 25,
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
