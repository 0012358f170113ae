"""bench/load_mixed.py in a bounded run, as CI runs it: reads while versions are published and
`production` moves, against gunicorn with its own PostgreSQL and Redis. No 5xx, no torn read
(a `version=N` read that is not N's text, a label read whose version is not complete)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench._services import ROOT
from tests.faults.support import need_postgres_server, need_redis_server

need_redis_server()
need_postgres_server()

pytestmark = pytest.mark.integration


def test_mixed_load_has_no_server_errors_and_no_torn_reads():
    command = [sys.executable, "bench/load_mixed.py", "--requests", "25", "--readers", "4", "--workers", "2"]
    command += ["--skills", "3", "--json"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)

    assert done.returncode in (0, 1), done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for phase in ("baseline", "mixed"):
        row = figures[phase]
        assert row["reads"] >= 100, row
        assert row["server_errors"] == 0, row
        assert row["torn_reads"] == 0, row
        assert set(row["statuses"]) <= {"200", "201"}, row
    # The writers really ran alongside the readers.
    assert figures["mixed"]["publishes"] == 50 and figures["mixed"]["label_moves"] == 25, figures["mixed"]
    assert done.returncode == 0
