"""The one per-process LRU for reads keyed by a number that only grows: the registry generation
(readmodel/generation.py), or the token epoch for token grants.

Every key starts with that number; the rest of the key says what was read (a skill name, a label,
a resolve's inputs, a token's secret hash). A change moves the number on, so an entry is never
invalidated, only outgrown: each rest of a key holds one entry, the newest number's (no reader
asks for an older one again), and past `maxsize` the least recently used rest goes.

An entry of an older generation is replaced only by one under the same rest, not dropped when any
newer one is stored: a resolve snapshot is moved forward from the one held at its label
(registry/readmodel/snapshot.py), and every label read since the last write must still have one, not
only the label read first after it. Used for the raw SKILL.md bytes, the skill catalogue, the
resolve snapshots and results, and token grants.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Generic, TypeVar

Value = TypeVar("Value")

# Every memo of this process, so one call forgets them all (`memos_clear`).
_ALL: weakref.WeakSet[GenerationMemo] = weakref.WeakSet()


class GenerationMemo(Generic[Value]):
    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._entries: OrderedDict[tuple, tuple[int, Value]] = OrderedDict()  # rest -> (generation, value)
        self._lock = threading.Lock()
        _ALL.add(self)

    def get(self, key: tuple) -> Value | None:
        """The value stored under `key` (its first item is the generation), or None."""
        generation, rest = key[0], key[1:]
        with self._lock:
            held = self._entries.get(rest)
            if held is None or held[0] != generation:
                return None
            self._entries.move_to_end(rest)
            return held[1]

    def newest_before(self, generation: int, *rest: object) -> Value | None:
        """The entry held under `rest` when it is of a generation below `generation`: what a
        resolve snapshot is moved forward from (registry/readmodel/snapshot.py)."""
        with self._lock:
            held = self._entries.get(rest)
        return held[1] if held is not None and held[0] < generation else None

    def put(self, key: tuple, value: Value) -> None:
        generation, rest = key[0], key[1:]
        with self._lock:
            held = self._entries.get(rest)
            if held is not None and held[0] > generation:
                return  # stored by a reader still at an older generation: keep what others ask for
            self._entries[rest] = (generation, value)
            self._entries.move_to_end(rest)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def memos_clear() -> None:
    """Forget every entry of every memo in this process (a database whose generations may repeat:
    tests rolled back, a restored backup)."""
    for memo in list(_ALL):
        memo.clear()
