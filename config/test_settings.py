"""Settings for the test suite: the normal settings with TESTING on (scripted model allowed,
a fixed development secret). Kept as a module so that the Celery workers the integration tests
start run with exactly the same configuration."""

import os

os.environ["TESTING"] = "1"

from config.settings import *  # noqa: E402,F403
from config.settings import CELERY_TASK_ROUTES, DATABASES, VAR_DIR  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# A worker process must open the same test database as the test run, so SQLite's test
# database is a file, not pytest-django's default in-memory database.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}

# Keep test tasks apart from a development worker that may share the same Redis.
CELERY_TASK_DEFAULT_QUEUE = "skill-registry-tests"
WEBHOOK_QUEUE = "skill-registry-tests-webhooks"
CELERY_TASK_ROUTES = {task: {"queue": WEBHOOK_QUEUE} for task in CELERY_TASK_ROUTES}
