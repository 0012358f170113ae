"""`make bench`: every benchmark, one after the other, printing their figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPTS = (
    "import_skills.py",
    "resolve.py",
    "rollout_resolve.py",
    "skill_md_throughput.py",
    "client_resolve.py",
    "mcp_list.py",
    "resolve_http.py",
    "runtime_step.py",
    "trace_size.py",
    "enqueue_latency.py",
    "prompt_tokens.py",
    "invalidation.py",
    "sandbox_overhead.py",
    "load_mixed.py",
    "console_pages.py",
    "skill_list_after_publish.py",
    "turn_list.py",
    "evals_run.py",
)

for script in SCRIPTS:
    print(f"\n== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)
