"""Import 1,000 skill folders, re-import them unchanged, and a no-op `skills sync`.

    .venv/bin/python bench/import_skills.py [--skills 1000]

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import prepare_environment, setup_django  # noqa: E402


def make_tree(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"bench-import-{i:04d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: bench-import-{i:04d}\ndescription: Benchmark skill {i}; use when measuring imports.\n"
            f"tags: [bench, import]\ntriggers: [task_match]\n---\n\n# Skill {i}\n\n" + "Step.\n" * 40
        )
        script = folder / "scripts" / "run.py"
        script.write_text(f"print({i})\n")
        os.chmod(script, 0o755)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    args = parser.parse_args()
    prepare_environment("import")
    setup_django()
    from django.db import connection

    from registry.services.skills import skills_import_tree, skills_sync_bundled

    root = Path(tempfile.mkdtemp(prefix="skill-bench-tree-"))
    make_tree(root, args.skills)
    print(f"database: {connection.vendor}; {args.skills} folders (SKILL.md + scripts/run.py) in {root}")

    def measure(label: str, action) -> None:
        started = time.perf_counter()
        report = action()
        elapsed = time.perf_counter() - started
        skipped = len(getattr(report, "skipped", []))
        print(
            f"  {label}: {elapsed:6.2f} s ({args.skills / elapsed:7.0f} skills/s) - {len(report.published)} "
            f"published, {len(report.unchanged)} unchanged, {len(report.failed)} failed, {skipped} skipped"
        )

    measure("import (workspace, first time)", lambda: skills_import_tree(root=root, source="workspace"))
    measure("re-import unchanged", lambda: skills_import_tree(root=root, source="workspace"))
    measure("sync as bundled (first time)", lambda: skills_sync_bundled(root=root))
    measure("sync again (no-op)", lambda: skills_sync_bundled(root=root))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
