"""One small per-process cache for reads keyed by the registry generation.

Every key starts with the generation it was computed at (selectors/generation.py). Writes bump
the generation, so an entry is never invalidated, only outgrown: storing an entry of a newer
generation drops the older ones (no reader asks for them again), and past `maxsize` the least
recently used entry goes. Used for the raw SKILL.md bytes, the skill catalogue and the resolve
snapshots.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

Value = TypeVar("Value")


class GenerationMemo(Generic[Value]):
    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._entries: OrderedDict[tuple, Value] = OrderedDict()
        self._newest = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Value | None:
        """The value stored under `key` (its first item is the generation), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def newest_before(self, generation: int, *rest: object) -> Value | None:
        """The entry of the newest generation below `generation` whose key ends in `rest`: what a
        resolve snapshot is moved forward from (registry/snapshot_delta.py)."""
        with self._lock:
            held = [(key[0], value) for key, value in self._entries.items() if key[0] < generation and key[1:] == rest]
        return max(held, key=lambda item: item[0])[1] if held else None

    def put(self, key: tuple, value: Value) -> None:
        generation = key[0]
        with self._lock:
            if generation > self._newest:
                self._newest = generation
                for stale in [k for k in self._entries if k[0] < generation]:
                    del self._entries[stale]
            self._entries[key] = value
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._newest = 0
