"""Settings for the test suite: the normal settings with TESTING on (scripted model allowed,
a fixed development secret). Kept as a module so that the Celery workers the integration tests
start run with exactly the same configuration."""

import os

os.environ["TESTING"] = "1"

from config.settings import *  # noqa: E402,F403
from config.settings import CACHES, CELERY_TASK_ROUTES, DATABASES, VAR_DIR  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# A worker process must open the same test database as the test run, so SQLite's test
# database is a file, not pytest-django's default in-memory database.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}

# pytest-xdist runs the suite in several processes (gw0, gw1, ...), each with a test database of
# its own; the Celery workers a process starts inherit its PYTEST_XDIST_WORKER, so they read the
# same settings as the process that started them.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")

# Keep test tasks apart from a development worker that may share the same Redis, and each test
# process's tasks apart from another's: its workers read its own test database.
CELERY_TASK_DEFAULT_QUEUE = "-".join(filter(None, ["skill-registry-tests", _XDIST_WORKER]))
WEBHOOK_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-webhooks"
SCAN_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-scans"
CELERY_TASK_ROUTES = {
    task: {"queue": SCAN_QUEUE if route["queue"] == "scans" else WEBHOOK_QUEUE}
    for task, route in CELERY_TASK_ROUTES.items()
}

# Test processes share one Redis database but not their test databases, whose row ids and
# registry generations then repeat from one process to the next: a key made in one must not be
# read in another (Celery workers all keep the read model's shared namespace).
if _XDIST_WORKER:
    CACHES["default"]["KEY_PREFIX"] = _XDIST_WORKER

# Every registry write would queue a routing recompute that some later module's worker then runs;
# the tests of that recompute turn it on (tests/registry/test_catalog_routing_worker.py).
CATALOG_ROUTING_BACKGROUND = False
