"""Shared fixtures: users with roles, API clients with scoped tokens, skill factories."""

from __future__ import annotations

import os
import textwrap

import pytest
from django.conf import settings
from hypothesis import settings as hypothesis_settings

from config import local_state
from tests.factories import UserFactory, make_skill_md, user_with_role

# CI explores a fixed sequence of examples so a red run can be reproduced; local runs keep
# finding new ones (and a failure found there becomes an explicit test).
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def pytest_configure(config):
    # Settings write nothing at import; the SQLite test database and the filesystem broker (when
    # REDIS_URL is unset) need VAR_DIR's folders, as `make run` makes them.
    local_state.prepare(settings.VAR_DIR)
    if config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput"):
        from tests import template_database
        from tests.scheduling import UnitTimes

        config.pluginmanager.register(UnitTimes(config), "skill-registry-unit-times")
        template_database.register(config)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, request):
    """A test process's database is a copy of the run's migrated template (tests/template_database.py)."""
    from tests.template_database import use_template

    use_template(request.config)


@pytest.fixture
def admin_user(db):
    return UserFactory(username="root", is_superuser=True, is_staff=True)


@pytest.fixture
def make_token(db):
    """make_token(scopes=[...], user=None) -> secret, for `Authorization: Bearer <secret>`.

    Without `user`, the owner gets the narrowest role that grants the scopes (a token can hold
    no more than its owner's role); a given user must already have them."""
    from registry.roles import ADMIN, ANALYST, AUTHOR, ROLE_SCOPES
    from registry.services.tokens import api_token_create

    counter = iter(range(10_000))

    def make(scopes: list[str], user=None) -> str:
        if user is None:
            role = next(role for role in (ANALYST, AUTHOR, ADMIN) if set(scopes) <= ROLE_SCOPES[role])
            user = user_with_role(role)
        _, secret = api_token_create(name=f"token-{next(counter)}", username=user.username, scopes=scopes)
        return secret

    return make


@pytest.fixture
def api(make_token):
    """An APIClient authenticated with a token holding every scope."""
    from rest_framework.test import APIClient

    from registry.models import TokenScope

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(list(TokenScope.values))}")
    return client


@pytest.fixture
def skill_md():
    return make_skill_md


@pytest.fixture
def dedent():
    return lambda text: textwrap.dedent(text).lstrip("\n")


@pytest.fixture(autouse=True)
def _no_trace_writer_left():
    """A turn run outside a test transaction writes its steps from a thread with its own
    database connection; it must not outlive the test (the test database is dropped at the end)."""
    yield
    from agents.turns.trace import step_writer_shutdown

    step_writer_shutdown()


@pytest.fixture(autouse=True)
def _fresh_registry_caches():
    """Each test's database rolls back, so generation numbers repeat between tests: a cached
    resolve or SKILL.md from an earlier test must not be served to the next one."""
    from registry.selectors.resolve import registry_caches_reset
    from registry.services.logins import login_throttle_reset

    registry_caches_reset()
    login_throttle_reset()  # failed logins counted in the shared Redis must not lock the next test
    yield
    registry_caches_reset()


# The modules that start workers, browsers or servers (their tests are marked so): the only ones
# whose tests queue tasks that a worker runs (see `_queues_emptied`).
SLOW_MODULES = pytest.StashKey[set]()


def pytest_collection_modifyitems(config, items):
    """With several test processes (make test), units of work go out longest first (see
    tests/scheduling.py), so the long ones run beside the rest instead of after them."""
    marks = ("integration", "browser")
    config.stash[SLOW_MODULES] = {
        getattr(item, "module", None) for item in items if any(map(item.get_closest_marker, marks))
    }
    if config.getoption("dist", "no") == "no":
        return
    from tests.scheduling import order_longest_first

    order_longest_first(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (make test): a module per unit of work, bar the few long tests that run apart."""
    if config.getoption("dist") != "loadfile":
        return None
    from tests.scheduling import UnitScheduling

    return UnitScheduling(config, log)


def pytest_sessionfinish(session, exitstatus):
    """In CI every service, Chromium and the corpus are present: a skip there would hide a
    failure, so any skip fails the run. Locally, skips name what is missing and pass.
    Under pytest-xdist the controller decides: its reporter counts every worker's tests."""
    if not os.environ.get("CI") or exitstatus != 0 or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(
            f"CI: {len(skipped)} test(s) skipped, which CI does not allow (see the reasons above)", red=True
        )
        session.exitstatus = 1


@pytest.fixture(scope="module", autouse=True)
def _queues_emptied(request):
    """A module that may run workers starts with this test process's Celery queues empty: a task
    an earlier module queued with no worker to run it (a browser test's turn, a webhook delivery),
    or that a stopped worker put back, is not for this module's workers."""
    if request.module not in request.config.stash.get(SLOW_MODULES, ()):
        return
    from tests.worker import queues_purge

    queues_purge([settings.CELERY_TASK_DEFAULT_QUEUE, settings.WEBHOOK_QUEUE])


@pytest.fixture(scope="session")
def worker_exits(django_db_setup):
    """worker_exits(process): a module's worker quits at the module's end and exits while the
    next tests run; every one has exited before the test database is dropped (PostgreSQL
    refuses to drop a database with connections open)."""
    quitting = []

    def quit_later(process) -> None:
        process.close()
        quitting.append(process)

    yield quit_later
    for process in quitting:
        process.stop()


@pytest.fixture(scope="session")
def default_worker(worker_exits, django_db_blocker):
    """This test process's Celery worker with the test settings, started by the first module that
    asks for `worker` and kept for the next ones (see `worker`)."""
    from tests.worker import WorkerProcess

    process = WorkerProcess(default=True)
    yield process
    worker_exits(process)


@pytest.fixture(scope="module")
def worker(default_worker):
    """A real Celery worker for the test module (tests needing other settings define their own).

    One worker serves every module of a test process that asks for it: at the module's end it
    stops consuming (Celery's remote control) and stays up, and the next module that asks for it
    has its queues emptied and consumed again. A worker left consuming would take the tasks that
    later modules' committed writes queue (a webhook delivery, a turn a browser test expects to
    stay queued) and run them where those tests assume no worker runs; one that holds a task for
    later (a retry's countdown) is stopped instead (`WorkerProcess.set_aside`)."""
    yield default_worker.serve()
    default_worker.set_aside()
