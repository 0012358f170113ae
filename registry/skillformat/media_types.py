"""The media type a bundled file is served with, from its name and, for unknown names, its bytes.

The REST file endpoint and the MCP `resources/read` answer with the same type for the same file.
"""

from __future__ import annotations

import mimetypes

_TEXT_TYPES = {
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".txt": "text/plain",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".js": "text/javascript",
    ".ts": "text/plain",
    ".rb": "text/plain",
    ".go": "text/plain",
    ".rs": "text/plain",
    ".sql": "text/plain",
}


def path_content_type(path: str) -> str:
    """The type a file's name says, without its charset; `application/octet-stream` when unknown."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _TEXT_TYPES.get(suffix) or mimetypes.guess_type(path, strict=False)[0] or "application/octet-stream"


def file_content_type(path: str, content: bytes) -> str:
    """The name's type, or `text/plain` for an unknown name whose bytes are UTF-8 text."""
    guessed = path_content_type(path)
    is_text = guessed.startswith("text/") or guessed in ("application/json", "application/yaml", "application/toml")
    if guessed == "application/octet-stream" and b"\x00" not in content[:8192]:
        try:
            content.decode("utf-8")
            guessed, is_text = "text/plain", True
        except UnicodeDecodeError:
            pass
    return f"{guessed}; charset=utf-8" if is_text else guessed
