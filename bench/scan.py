"""Scanning 1,000 versions on the `scans` worker, and what scanning costs a publish.

    DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/scan.py [--versions 1000] [--baseline 200]

In one run, on one database and machine:
1. no worker: publishes with no scan queued (the publish path without scanning) interleaved with
   publishes that queue their scan;
2. 1,000 publishes with scanning on while a `scans` worker (as the Procfile starts it) scans them
   in the background, interleaved with publishes that queue no scan (same moments, same machine);
3. the scans themselves: time per version (p50, p95) as the worker recorded it, and the wall time
   until the last verdict;
4. the ratios: the publish path's own cost, the worker's effect, and scanning on against the
   baseline with no worker.

The versions are the real skills in shared/corpus/ and the hostile test skills, cycled, each with a
line of its own so every publish makes a new version. DATABASE_URL and REDIS_URL must be set (give
the bench a database and a Redis db of its own: the worker takes every scan queued there).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, percentile, prepare_environment, setup_django  # noqa: E402

CORPUS = Path(os.environ.get("SKILL_CORPUS", "/work/shared/corpus"))
HOSTILE = ROOT / "tests" / "registry" / "hostile_skills"


def _folders() -> list[Path]:
    from registry.skillformat.bundle import find_skill_folders

    found = find_skill_folders(CORPUS) if CORPUS.exists() else []
    return [*found, *sorted(path for path in HOSTILE.iterdir() if path.is_dir())]


def _bundles(count: int, tag: str):
    """`count` bundles of distinct content: the folders cycled, SKILL.md given a line of its own."""
    from registry.skillformat.bundle import Bundle, read_folder

    bases = []
    for folder in _folders():
        try:
            bases.append(read_folder(folder))
        except Exception:  # a corpus folder over this deployment's limits is simply not used
            continue
    for i in range(count):
        base = bases[i % len(bases)]
        yield Bundle(skill_md=base.skill_md + f"\n<!-- bench {tag} {i} -->\n".encode(), files=base.files)


def _publish_all(bundles, *, scanning: bool) -> list[float]:
    from registry.services import skills as skill_services
    from registry.services.scans import scan_queue

    skill_services.scan_queue = scan_queue if scanning else (lambda **_: None)  # type: ignore[assignment]
    latencies = []
    for bundle in bundles:
        started = time.perf_counter()
        skill_services.skill_version_publish(bundle=bundle, accept_lenient=True, source="workspace")
        latencies.append((time.perf_counter() - started) * 1000)
    skill_services.scan_queue = scan_queue
    return latencies


def _interleaved(bundles, *, every: int) -> tuple[list[float], list[float]]:
    """Publishes with scanning on, and every `every`-th one with no scan queued instead: both
    kinds meet the same machine at the same moments, so their ratio is not the drift of a shared
    machine between two phases."""
    on: list[float] = []
    off: list[float] = []
    for i, bundle in enumerate(bundles):
        scanning = i % every != every - 1
        (on if scanning else off).extend(_publish_all([bundle], scanning=scanning))
    return on, off


def _line(name: str, samples: list[float]) -> str:
    return (
        f"  {name}: p50 {percentile(samples, 50):7.2f} ms, p95 {percentile(samples, 95):7.2f} ms, "
        f"mean {statistics.fmean(samples):7.2f} ms (n={len(samples)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--baseline", type=int, default=200)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        raise SystemExit("Set DATABASE_URL and REDIS_URL (a database and Redis db of the bench's own).")
    prepare_environment("scan")
    setup_django()
    from django.conf import settings
    from django.db import connection

    from bench._turns import WorkerProcess
    from registry.models import ScanStatus, SkillScan

    SkillScan.objects.filter(status__in=[ScanStatus.QUEUED, ScanStatus.RUNNING]).delete()  # an earlier run's
    print(f"database: {connection.vendor}; {len(_folders())} skill folders cycled")

    idle_on, idle_off = _interleaved(_bundles(2 * args.baseline, f"idle-{time.time()}"), every=2)
    print(_line("publish, no worker, no scan queued (baseline)", idle_off))
    print(_line("publish, no worker, scan queued (the publish's own cost)", idle_on))
    SkillScan.objects.filter(status=ScanStatus.QUEUED).delete()  # not part of the 1,000

    worker = WorkerProcess(env=dict(os.environ), concurrency=1, queue=settings.SCAN_QUEUE, solo=True)
    worker.wait_ready()
    first = SkillScan.objects.order_by("-id").values_list("id", flat=True).first() or 0
    started = time.perf_counter()
    every = max(2, round(args.versions / args.baseline) + 1)
    during, during_off = _interleaved(
        _bundles(args.versions + args.versions // (every - 1), f"s-{time.time()}"), every=every
    )
    publish_seconds = time.perf_counter() - started
    print(_line(f"publish, scan queued, worker scanning meanwhile ({publish_seconds:.0f} s of publishing)", during))
    print(_line("publish, no scan queued, worker scanning meanwhile (interleaved)", during_off))
    while SkillScan.objects.filter(id__gt=first).exclude(status=ScanStatus.DONE).exists():
        time.sleep(0.5)
    wall = time.perf_counter() - started
    worker.stop()
    scans = list(SkillScan.objects.filter(id__gt=first).order_by("finished_at").values_list("duration_ms", "verdict"))
    # The first scan starts the worker's scanner engine (imports, YARA rules): shown apart.
    durations = [float(ms) for ms, _ in scans[1:] if ms is not None]
    verdicts = {verdict: sum(1 for _, v in scans if v == verdict) for verdict in sorted({v for _, v in scans})}
    print(_line(f"scan per version ({len(scans)} scans, on the worker)", durations))
    print(f"  first scan, scanner engine start-up included: {scans[0][0] / 1000:.1f} s" if scans else "  no scans")
    print(f"  all {len(scans)} verdicts {wall:.0f} s after the first publish ({len(scans) / wall:.1f}/s): {verdicts}")

    for pct in (50, 95):
        own = percentile(idle_on, pct) / percentile(idle_off, pct)
        busy = percentile(during, pct) / percentile(during_off, pct)
        total = percentile(during, pct) / percentile(idle_off, pct)
        print(
            f"  publish p{pct}: scan queued / not, no worker {own:.2f}x; while the worker scans {busy:.2f}x; "
            f"scanning on (worker busy) / baseline (no worker) {total:.2f}x"
        )


if __name__ == "__main__":
    main()
