"""Which scanner scans: its version and a digest of its rule packs, read from the installed
package without importing it (a rescan decision must not cost the scanner's start-up)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from functools import cache
from pathlib import Path

DISTRIBUTION = "cisco-ai-skill-scanner"


def scanner_version() -> str:
    return importlib.metadata.version(DISTRIBUTION)


@cache
def rulepack_digest() -> str:
    """sha256 over the scanner's bundled rule packs and policies (each file's path and digest):
    it changes when the rules change, even within one scanner version."""
    spec = importlib.util.find_spec("skill_scanner")
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    lines = [
        f"{path.relative_to(data).as_posix()}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
        for path in sorted(data.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
