"""Start-up checks (Django's system checks: `migrate`, `check` and `runserver` print them)."""

from __future__ import annotations

import stat
from pathlib import Path

from django.conf import settings
from django.core.checks import Warning, register

from config.local_state import PRIVATE_DIR, PRIVATE_FILE


def _looser(path: Path, allowed: int) -> int | None:
    """The mode of `path` when it grants more than `allowed`, else None (also when it is absent)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    return mode if mode & ~allowed else None


def _private_files() -> list[Path]:
    var_dir = Path(settings.VAR_DIR)
    files = [var_dir / "secret_key", var_dir / "admin-password.txt"]
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and str(database["NAME"]) != ":memory:":
        files.append(Path(database["NAME"]))
    return files


@register()
def var_dir_is_private(app_configs, **kwargs) -> list[Warning]:
    """VAR_DIR holds live session keys (the SQLite database), the secret key and the admin password:
    any other local user who can read them can take over the console."""
    warnings = []
    var_dir = Path(settings.VAR_DIR)
    mode = _looser(var_dir, PRIVATE_DIR)
    if mode is not None:
        warnings.append(
            Warning(
                f"{var_dir} is mode {mode:o}: other local users can reach the files in it.",
                hint=f"chmod 700 {var_dir}",
                id="registry.W001",
            )
        )
    for path in _private_files():
        mode = _looser(path, PRIVATE_FILE)
        if mode is not None:
            warnings.append(
                Warning(
                    f"{path} is mode {mode:o}: other local users can read it.",
                    hint=f"chmod 600 {path}",
                    id="registry.W002",
                )
            )
    return warnings
