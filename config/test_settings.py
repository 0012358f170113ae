"""Settings for the test suite: the normal settings with TESTING on (scripted model allowed,
a fixed development secret). Kept as a module so Celery workers started by tests can use it too."""

import os

os.environ["TESTING"] = "1"

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
