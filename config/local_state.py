"""Prepare VAR_DIR for a local instance before Django starts (`make run`, the benchmarks).

Settings only read: this makes the folders they point at (the filesystem broker's, which Kombu
does not create, and collectstatic's) and, once, a random SECRET_KEY kept in VAR_DIR/secret_key
for an instance without one. Run as `python config/local_state.py`: it imports nothing of Django.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def prepare(var_dir: Path) -> None:
    for folder in ("broker/out", "broker/processed", "broker/control", "staticfiles"):
        (var_dir / folder).mkdir(parents=True, exist_ok=True)
    secret_file = var_dir / "secret_key"
    if not secret_file.exists():
        # Created readable by its owner only: the key signs sessions and CSRF tokens.
        descriptor = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_urlsafe(50))


if __name__ == "__main__":
    prepare(Path(os.environ.get("VAR_DIR", ROOT / "var")))
    sys.exit(0)
