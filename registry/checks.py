"""Start-up checks (Django's system checks: `migrate`, `check` and `runserver` print them)."""

from __future__ import annotations

import stat
from pathlib import Path

from django.conf import settings
from django.core.checks import Error, Warning, register

from config.local_state import PRIVATE_DIR, PRIVATE_FILE


def _too_open(path: Path, allowed: int, *, exposed: str, check_id: str) -> list[Warning]:
    """A warning when `path` grants more than the mode `allowed` (none when it is absent)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return []
    if not mode & ~allowed:
        return []
    return [
        Warning(f"{path} is mode {mode:o}: other local users {exposed}.", hint=f"chmod {allowed:o} {path}", id=check_id)
    ]


def _private_files() -> list[Path]:
    var_dir = Path(settings.VAR_DIR)
    # The release-signing key too: whoever reads it can sign skills as the registry.
    files = [var_dir / "secret_key", var_dir / "admin-password.txt", Path(settings.SIGNING_KEY_FILE)]
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and str(database["NAME"]) != ":memory:":
        files.append(Path(database["NAME"]))
    return files


@register()
def var_dir_is_private(app_configs, **kwargs) -> list[Warning]:
    """VAR_DIR holds live session keys (the SQLite database), the secret key and the admin password:
    any other local user who can read them can take over the console."""
    var_dir = Path(settings.VAR_DIR)
    warnings = _too_open(var_dir, PRIVATE_DIR, exposed="can reach the files in it", check_id="registry.W001")
    for path in _private_files():
        warnings += _too_open(path, PRIVATE_FILE, exposed="can read it", check_id="registry.W002")
    return warnings


@register()
def scan_llm_model_is_allowed(app_configs, **kwargs) -> list[Error]:
    """SCAN_LLM_MODEL turns on the scanner's LLM analyzer; like every model the registry calls,
    it must be one of AGENT_MODELS, and a real model (the built-in offline and scripted models
    are the agent runtime's, which the scanner does not use)."""
    model = settings.SCAN_LLM_MODEL
    if not model:
        return []
    if model not in settings.AGENT_MODELS:
        return [
            Error(
                f"SCAN_LLM_MODEL={model!r} is not one of AGENT_MODELS ({', '.join(settings.AGENT_MODELS)}).",
                hint="Set SCAN_LLM_MODEL to one of AGENT_MODELS, or leave it empty for the offline analyzers only.",
                id="registry.E010",
            )
        ]
    if model in ("offline", "scripted"):
        return [
            Error(
                f"SCAN_LLM_MODEL={model!r} is the agent runtime's built-in model; the scanner needs a litellm model.",
                hint="Name a litellm model string from AGENT_MODELS, or leave SCAN_LLM_MODEL empty.",
                id="registry.E011",
            )
        ]
    return []
