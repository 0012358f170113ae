"""Shared helpers for the benchmark scripts: an isolated database, Django set-up, timing."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Topic words the scripts build synthetic skills, rules and queries from.
WORDS = (
    "pdf csv json yaml sql query database image chart report summary review commit deploy test debug "
    "search translate email calendar meeting invoice refactor migrate docker kubernetes api schema "
    "security audit backup restore cache queue metrics logs alert billing"
).split()


def prepare_environment(name: str) -> Path:
    """Point Django at the bench settings and, unless DATABASE_URL is set, a fresh SQLite file.

    With DATABASE_URL, that database is used as given (give benchmarks their own database: the
    scripts migrate it and add skills named bench-*).
    """
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    var = Path(tempfile.mkdtemp(prefix=f"skill-bench-{name}-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    os.environ.setdefault("VAR_DIR", str(var))
    os.environ.setdefault("SECRET_KEY", "bench-only-secret")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Persistent connections, as a production gunicorn should run (CONN_MAX_AGE=0 opens a new
    # database connection per request: a PostgreSQL backend fork each time).
    os.environ.setdefault("CONN_MAX_AGE", "60")
    # One token makes every request: the rate limit is still counted (its cost is in the
    # figures), it is just never reached.
    os.environ.setdefault("API_THROTTLE_RATE", "1000000000/min")
    # As `make run` does (importing the config package would set DJANGO_SETTINGS_MODULE).
    subprocess.run([sys.executable, str(ROOT / "config" / "local_state.py")], check=True)
    return var


def setup_django() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def timed(fn, repeat: int) -> list[float]:
    """Milliseconds per call."""
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def describe(samples_ms: list[float]) -> str:
    return (
        f"p50 {percentile(samples_ms, 50):.2f} ms, p99 {percentile(samples_ms, 99):.2f} ms, "
        f"mean {statistics.fmean(samples_ms):.2f} ms (n={len(samples_ms)})"
    )
