"""A registry generation number that every cached read (resolve, prompt blocks) is keyed by.

Any publish, label move, enable/disable or rule change bumps it inside its own transaction, so
caches are invalidated the moment the change commits, without tracking which keys it affects.
It lives in the database rather than the cache because the default cache is per-process local
memory: a web process and a worker must still agree on what is current.
"""

from __future__ import annotations

from django.db.models import F

from registry.models import RegistryState

_ROW = 1


def registry_generation() -> int:
    state = RegistryState.objects.filter(pk=_ROW).values_list("generation", flat=True).first()
    return state or 0


def registry_changed() -> None:
    """Call inside the writing transaction; readers see the new number only once it commits."""
    updated = RegistryState.objects.filter(pk=_ROW).update(generation=F("generation") + 1)
    if not updated:
        RegistryState.objects.get_or_create(pk=_ROW, defaults={"generation": 1})
