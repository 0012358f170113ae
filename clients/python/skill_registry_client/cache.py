"""Answers kept in memory and, with a `cache_dir`, on disk, each with the ETag to revalidate it
and the time the registry last confirmed it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

_PRUNE_EVERY = 128  # writes between two looks at the folder's size


@dataclass(frozen=True)
class Entry:
    key: str
    etag: str
    body: bytes
    checked_at: float  # time.time() when the registry last answered 200 or 304 for it
    unreachable: bool = False  # the last attempt to confirm it could not reach the registry
    parsed: Any = field(default=None, compare=False)  # the body as the client reads it, parsed once

    def confirmed(self, now: float) -> Entry:
        return replace(self, checked_at=now, unreachable=False)


class ResponseCache:
    """Bounded LRU in memory; every fresh answer also written to `directory` (one JSON file per
    key, replaced atomically, so readers in other processes never see half a file), which keeps
    the `max_disk_entries` most recently written."""

    def __init__(
        self,
        directory: str | os.PathLike | None,
        *,
        scope: str,
        max_entries: int = 1024,
        max_disk_entries: int = 10_000,
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        # Answers depend on the registry and on what the token may read: never shared across them.
        self._scope = hashlib.sha256(scope.encode("utf-8")).hexdigest()
        self._memory: OrderedDict[str, Entry] = OrderedDict()
        self._max = max_entries
        self._max_disk = max_disk_entries
        self._writes = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Entry | None:
        with self._lock:
            entry = self._memory.get(key)
            if entry is not None:
                self._memory.move_to_end(key)
                return entry
        entry = self._read(key)
        if entry is not None:
            self._remember(entry)
        return entry

    def put(self, entry: Entry, *, persist: bool = True) -> None:
        self._remember(entry)
        if persist:
            self._write(entry)

    def forget(self, key: str) -> None:
        with self._lock:
            self._memory.pop(key, None)
        path = self._file(key)
        if path is not None:
            path.unlink(missing_ok=True)

    def _remember(self, entry: Entry) -> None:
        with self._lock:
            self._memory[entry.key] = entry
            self._memory.move_to_end(entry.key)
            while len(self._memory) > self._max:
                self._memory.popitem(last=False)

    def _file(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / (hashlib.sha256(f"{self._scope}\n{key}".encode()).hexdigest() + ".json")

    def _read(self, key: str) -> Entry | None:
        path = self._file(key)
        if path is None:
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored["key"] != key:
                return None
            return Entry(
                key=key,
                etag=stored["etag"],
                body=base64.b64decode(stored["body"]),
                checked_at=float(stored["checked_at"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: as if never cached

    def _write(self, entry: Entry) -> None:
        path = self._file(entry.key)
        if path is None:
            return
        stored = {
            "key": entry.key,
            "etag": entry.etag,
            "body": base64.b64encode(entry.body).decode("ascii"),
            "checked_at": entry.checked_at,
        }
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(stored, out)
            os.replace(temporary, path)
        except OSError:
            Path(temporary).unlink(missing_ok=True)  # a cache that cannot be written is only slower
        self._writes += 1
        if self._writes % _PRUNE_EVERY == 0:
            self._prune()

    def _prune(self) -> None:
        """Every resolve query is a key of its own: keep the folder to the newest answers."""
        assert self.directory is not None
        try:
            files = [(entry.stat().st_mtime, entry.path) for entry in os.scandir(self.directory)]
        except OSError:
            return
        if len(files) <= self._max_disk:
            return
        for _, path in sorted(files)[: len(files) - self._max_disk * 9 // 10]:
            Path(path).unlink(missing_ok=True)
