"""Fail when a site-packages directory holds a .pth file nobody vouched for.

Python executes every line of a .pth file that starts with `import` when the interpreter starts,
in every process of the venv (gunicorn, the Celery worker, manage.py, pytest), without anything
importing the package: that is where a compromised release hides its payload (litellm 1.82.8
shipped `litellm_init.pth`). Hash-locked installs stop a tampered download; this check catches
what a locked but malicious release, or a hand install, leaves behind.

Each allowed .pth file is named with the distribution that installs it and why it exists, and
must still match the hash that distribution's RECORD gives it, so an edited allowed file fails too.

Run: `python -m config.check_pth [SITE_PACKAGES ...]` (default: this interpreter's).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import site
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AllowedPth:
    distribution: str
    reason: str


ALLOWED_PTH = {
    "distutils-precedence.pth": AllowedPth(
        distribution="setuptools",
        reason="setuptools (seeded into every venv by ensurepip) makes `import distutils` load its "
        "own copy unless SETUPTOOLS_USE_DISTUTILS=stdlib",
    ),
}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _recorded_hashes(site_dir: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(distribution, top-level file name) -> (hash algorithm, urlsafe base64 digest) from RECORDs."""
    recorded = {}
    for dist in importlib.metadata.distributions(path=[str(site_dir)]):
        for file in dist.files or []:
            if len(file.parts) == 1 and file.hash is not None:
                recorded[(_normalized(dist.metadata["Name"]), file.name)] = (file.hash.mode, file.hash.value)
    return recorded


def _digest(path: Path, algorithm: str) -> str:
    # RECORD's encoding: urlsafe base64 without padding (PEP 376 / the wheel spec).
    return base64.urlsafe_b64encode(hashlib.new(algorithm, path.read_bytes()).digest()).rstrip(b"=").decode()


def pth_problems(site_dir: Path) -> list[str]:
    recorded = _recorded_hashes(site_dir)
    problems = []
    for pth in sorted(site_dir.glob("*.pth")):
        allowed = ALLOWED_PTH.get(pth.name)
        if allowed is None:
            problems.append(f"{pth}: unexpected .pth file (not in ALLOWED_PTH in config/check_pth.py)")
            continue
        record = recorded.get((_normalized(allowed.distribution), pth.name))
        if record is None:
            problems.append(
                f"{pth}: allowed only as installed by {allowed.distribution}, whose RECORD does not list it"
            )
        elif _digest(pth, record[0]) != record[1]:
            problems.append(f"{pth}: differs from the file {allowed.distribution} installed (hash in its RECORD)")
    return problems


def main(argv: list[str]) -> int:
    site_dirs = [Path(arg) for arg in argv] or [Path(p) for p in site.getsitepackages()]
    problems = [problem for site_dir in site_dirs for problem in pth_problems(site_dir)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f".pth files in {', '.join(map(str, site_dirs))}: only the allowed ones")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
