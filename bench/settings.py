"""Settings for benchmarks only: the production settings plus a URLconf with a bare view."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
