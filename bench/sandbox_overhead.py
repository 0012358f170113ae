"""What the run_skill sandbox adds per call: bubblewrap against an unconfined subprocess.

    .venv/bin/python bench/sandbox_overhead.py [--runs 40]

Runs the same skill scripts through agents.runtime.sandbox.run_script with RUN_SKILL_SANDBOX's
two modes, alternating so both see the same machine load, and prints p50/p90 per mode and the
difference. Two scripts: a shell script (the same /bin/sh in both modes, so the difference is
the sandbox alone: namespaces, mounts, the tmpfs, prlimit) and a Python script (the sandbox
runs the system's python3, unconfined runs use the worker's interpreter). No database needed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.runtime.sandbox import BundleFile, Isolation, run_script  # noqa: E402
from bench._common import percentile  # noqa: E402

SCRIPTS = {
    "shell": [BundleFile("scripts/hello.sh", b'#!/bin/sh\necho "hello $1"\n', True)],
    "python": [BundleFile("scripts/hello.py", b"import sys\nprint('hello', sys.argv[1])\n", False)],
}
# Also part of every run: a bundle of a realistic size to copy in (20 files, 200 KB).
REFERENCES = [BundleFile(f"references/doc-{index}.md", b"x" * 10_000, False) for index in range(20)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    options = parser.parse_args()

    print(f"run_skill per call, {options.runs} runs per mode, alternating (milliseconds)")
    print(f"{'script':8} {'mode':6} {'p50':>8} {'p90':>8}")
    for name, files in SCRIPTS.items():
        bundle = [*files, *REFERENCES]
        entry = files[0].path
        samples: dict[Isolation, list[float]] = {Isolation.NONE: [], Isolation.BWRAP: []}
        for isolation in samples:  # warm-up: the first bwrap run also checks that namespaces work
            run_script(bundle, entry, ["warm-up"], isolation=isolation)
        for _ in range(options.runs):
            for isolation, times in samples.items():
                started = time.perf_counter()
                result = run_script(bundle, entry, ["bench"], isolation=isolation)
                times.append((time.perf_counter() - started) * 1000)
                assert result.ok and "hello bench" in result.stdout, result
        for isolation, times in samples.items():
            print(f"{name:8} {isolation.value:6} {percentile(times, 50):8.1f} {percentile(times, 90):8.1f}")
        added = percentile(samples[Isolation.BWRAP], 50) - percentile(samples[Isolation.NONE], 50)
        print(f"{name:8} added by the sandbox (p50): {added:+.1f} ms")


if __name__ == "__main__":
    main()
