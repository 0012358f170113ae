"""`make bench`: every benchmark, one after the other, printing their figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

for script in ("import_skills.py", "resolve.py", "skill_md_throughput.py"):
    print(f"\n== {script}", flush=True)
    subprocess.run([sys.executable, str(HERE / script)], check=True)
