"""Detection and false positives of the scanner's offline analyzers, per analyzer.

    .venv/bin/python bench/scan_detection.py [--corpus /work/shared/corpus]

The hostile side is the test fixture set (tests/registry/hostile_skills/: exfiltration,
`curl | sh`, obfuscated payloads, credential harvesting, prompt injection in SKILL.md); the benign
side is every real skill in shared/corpus/. An analyzer "fires" on a skill when it reports at
least one finding that moves the verdict (MEDIUM or worse); the registry's verdict is the worst
severity of all of them (registry/scanning/verdicts.py). No database: the scanner runs as the
worker runs it (registry/scanning/runner.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from registry.scanning.runner import scan_folder  # noqa: E402
from registry.skillformat.bundle import find_skill_folders  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "registry" / "hostile_skills"
SERIOUS = ("CRITICAL", "HIGH", "MEDIUM")
NOT_CLEAN = ("review", "warn", "malicious")


def scan_all(folders: list[Path]) -> dict[Path, tuple[str, set[str], list[dict]]]:
    results = {}
    for folder in folders:
        outcome = scan_folder(folder.resolve(), timeout=300)
        fired = {f["analyzer"] or "?" for f in outcome.findings if f["severity"] in SERIOUS}
        results[folder] = (outcome.verdict, fired, outcome.findings)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--show", action="store_true", help="List each corpus skill's serious findings.")
    args = parser.parse_args()
    hostile = sorted(path for path in HOSTILE.iterdir() if path.is_dir())
    benign = find_skill_folders(args.corpus)
    started = time.perf_counter()
    bad = scan_all(hostile)
    good = scan_all(benign)
    print(f"{len(hostile)} hostile skills, {len(benign)} corpus skills, {time.perf_counter() - started:.0f} s")

    analyzers = sorted({a for _, fired, _ in [*bad.values(), *good.values()] for a in fired})
    print(f"\n{'analyzer':<14} {'detected':>14} {'false positives':>18}")
    for analyzer in analyzers:
        detected = sum(analyzer in fired for _, fired, _ in bad.values())
        false = sum(analyzer in fired for _, fired, _ in good.values())
        print(f"{analyzer:<14} {detected:>6}/{len(hostile):<7} {false:>9}/{len(benign):<8}")
    detected = sum(verdict in NOT_CLEAN for verdict, _, _ in bad.values())
    false = sum(verdict in NOT_CLEAN for verdict, _, _ in good.values())
    print(f"{'verdict':<14} {detected:>6}/{len(hostile):<7} {false:>9}/{len(benign):<8}  (not clean)")
    warn_up = sum(verdict in ("warn", "malicious") for verdict, _, _ in good.values())
    print(f"{'':<14} {'':>14} {warn_up:>9}/{len(benign):<8}  (warn or malicious)")

    print("\nhostile verdicts: " + ", ".join(f"{path.name} {verdict}" for path, (verdict, _, _) in bad.items()))
    print(
        "corpus verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(v for v, _, _ in good.values()).items()))
    )
    errors = [path for path, (verdict, _, _) in [*bad.items(), *good.items()] if verdict == "error"]
    if errors:
        print("errors: " + ", ".join(str(path) for path in errors))
    rules = Counter(f["rule_id"] for _, _, findings in good.values() for f in findings if f["severity"] in SERIOUS)
    print("\nrules behind the corpus's false positives: " + ", ".join(f"{r} {n}" for r, n in rules.most_common(12)))
    if args.show:
        for path, (verdict, _, findings) in good.items():
            for f in findings:
                if f["severity"] in SERIOUS:
                    where = f"{f['file']}:{f['line']}"
                    print(f"  {path.relative_to(args.corpus)} {verdict}: {f['severity']} {f['rule_id']} {where}")


if __name__ == "__main__":
    main()
