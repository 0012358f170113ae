"""Finished answers kept per process, keyed by the registry generation and the request's inputs,
and the reset that forgets every cache of the read model at once."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any, Generic, TypeVar

from registry.readmodel.generation import change_listener
from registry.readmodel.memo import GenerationMemo, memos_clear

Value = TypeVar("Value")

# Part of every cache key. Generations only grow in a live database, but a test database rolled
# back between tests (or a restored backup) repeats them: `registry_caches_reset()` moves to a
# fresh namespace so results computed for another state can never be served.
_NAMESPACE = {"token": "0"}


class ResultCache(Generic[Value]):
    """This process's most recent answers, kept as the objects themselves. Computing a resolve
    result for a new query costs about what fetching and unpickling a cached one (~80 KB) from
    Redis does, and an agent sends each message once: a shared cache would add a round trip to
    every new query to find nothing, and another to store a result nobody asks for again. Keys
    carry the generation, so an entry is never stale."""

    def __init__(self, maxsize: int) -> None:
        self._memo: GenerationMemo[Value] = GenerationMemo(maxsize=maxsize)

    def get(self, generation: int, inputs: dict[str, Any]) -> Value | None:
        return self._memo.get(_key(generation, inputs))

    def put(self, generation: int, inputs: dict[str, Any], value: Value) -> None:
        self._memo.put(_key(generation, inputs), value)


def _key(generation: int, inputs: dict[str, Any]) -> tuple[int, str, str]:
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()
    return (generation, _NAMESPACE["token"], digest)


def cache_namespace() -> str:
    """Part of the keys of answers kept outside this process (the shared cache)."""
    return _NAMESPACE["token"]


def registry_caches_reset() -> None:
    """Forget every cached snapshot, catalogue, raw SKILL.md and result (tests; after a DB restore)."""
    memos_clear()
    change_listener.close()
    _NAMESPACE["token"] = uuid.uuid4().hex[:12]
