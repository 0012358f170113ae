"""A registry generation number that every cached read (resolve, prompt blocks, raw SKILL.md)
is keyed by.

Any publish, label move, enable/disable or rule change bumps it inside its own transaction, so
caches are invalidated the moment the change commits, without tracking which keys it affects.
It lives in the database rather than the cache because the default cache is per-process local
memory: a web process and a worker must still agree on what is current.

The row starts at a random number. If it is ever recreated (a database restored from a backup,
tables flushed between tests), numbers from before can then not come back and revive entries
that processes still hold in their caches.
"""

from __future__ import annotations

import secrets

from django.db.models import F

from registry.models import RegistryState

_ROW = 1


def _fresh_start() -> int:
    return secrets.randbelow(2**40) + 1


def registry_generation() -> int:
    generation = RegistryState.objects.filter(pk=_ROW).values_list("generation", flat=True).first()
    if generation is None:
        generation = RegistryState.objects.get_or_create(pk=_ROW, defaults={"generation": _fresh_start()})[0].generation
    return generation


def registry_changed() -> None:
    """Call inside the writing transaction; readers see the new number only once it commits."""
    updated = RegistryState.objects.filter(pk=_ROW).update(generation=F("generation") + 1)
    if not updated:
        RegistryState.objects.get_or_create(pk=_ROW, defaults={"generation": _fresh_start()})
