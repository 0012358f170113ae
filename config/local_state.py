"""Prepare VAR_DIR for a local instance before Django starts (`make run`, the benchmarks).

Settings only read: this makes the folders they point at (the filesystem broker's, which Kombu
does not create, and collectstatic's) and, once, a random SECRET_KEY kept in VAR_DIR/secret_key
for an instance without one. Run as `python config/local_state.py`: it imports nothing of Django.

VAR_DIR holds the embedded database (live session keys), the secret key and the generated admin
password: it is made readable by its owner only (0700), and each of those files is created 0600
from its first byte, never chmod'ed after it was written. `registry/checks.py` warns at start-up
when any of them is looser.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_file_create(path: Path, text: str = "") -> bool:
    """Create `path` readable by its owner only and write `text`; False (nothing written) if it exists."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    return True


def sqlite_path(database_url: str | None, var_dir: Path) -> Path | None:
    """The embedded database's file: the default under VAR_DIR, or a `sqlite:///` URL's path."""
    if not database_url:
        return var_dir / "db.sqlite3"
    if database_url.startswith("sqlite:///") and database_url != "sqlite:///:memory:":
        return Path(database_url.removeprefix("sqlite://"))
    return None


def prepare(var_dir: Path, database_url: str | None = None) -> None:
    var_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    for folder in ("broker/out", "broker/processed", "broker/control", "staticfiles"):
        (var_dir / folder).mkdir(parents=True, exist_ok=True)
    private_file_create(var_dir / "secret_key", secrets.token_urlsafe(50))
    database = sqlite_path(database_url, var_dir)
    if database is not None and database.parent.is_dir():
        # SQLite takes an empty file as a new database, and makes its -wal/-shm files with the
        # database file's mode, so the whole database is private from the first byte.
        private_file_create(database)
    # An older checkout made these with the default umask (0755, 0644): they are ours, so tighten them.
    var_dir.chmod(PRIVATE_DIR)
    for path in (var_dir / "secret_key", var_dir / "admin-password.txt", var_dir / "db.sqlite3"):
        if path.exists():
            path.chmod(PRIVATE_FILE)


if __name__ == "__main__":
    prepare(Path(os.environ.get("VAR_DIR", ROOT / "var")), os.environ.get("DATABASE_URL"))
    sys.exit(0)
