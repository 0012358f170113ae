"""The write every registry change makes: bump the generation that cached reads are keyed by
(registry/readmodel/generation.py says how readers hear of it) and log what changed, so resolve
snapshots move forward in place rather than rebuild."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.db.models import F, Q

from registry.models import RegistryChange, RegistryState
from registry.readmodel.generation import STATE_ROW, change_listener, registry_generation
from registry.services.catalog_routing import catalog_routing_changed

# The change log covers this many generations back (a process further behind rebuilds anyway).
_CHANGES_KEPT = 1024
_CHANGES_PRUNE_EVERY = 256


def registry_changed(*, skill: str | None = None, rules: bool = False) -> None:
    """Call inside the writing transaction; readers see the new number only once it commits.

    Say what changed — `skill`, the name whose effective skill may now differ (a publish, label
    move, enable/disable), and/or `rules` — and processes update their resolve snapshots in place
    (registry/readmodel/snapshot.py); say nothing and they rebuild them.
    """
    state = RegistryState.objects.filter(pk=STATE_ROW)
    if not state.update(generation=F("generation") + 1):
        # Deleted (a flushed or restored database): start again at a random number, so numbers
        # from before, which processes may still hold entries for, do not come back. Then bump
        # it as usual, which takes the row's lock whoever created it.
        RegistryState.objects.get_or_create(pk=STATE_ROW, defaults={"generation": secrets.randbelow(2**40) + 1})
        state.update(generation=F("generation") + 1)
    # The row stays locked by this transaction until it commits: the number read back is ours.
    generation = registry_generation()
    scopes = [(RegistryChange.Scope.SKILL, skill)] if skill else []
    if rules:
        scopes.append((RegistryChange.Scope.RULES, ""))
    RegistryChange.objects.bulk_create(
        RegistryChange(generation=generation, scope=scope, skill_name=name)
        for scope, name in scopes or [(RegistryChange.Scope.ALL, "")]
    )
    if generation % _CHANGES_PRUNE_EVERY == 0:
        # Also rows above this generation: left by a row that was reset to a smaller number.
        RegistryChange.objects.filter(
            Q(generation__lt=generation - _CHANGES_KEPT) | Q(generation__gt=generation)
        ).delete()
    transaction.on_commit(lambda: change_listener.committed(generation))
    transaction.on_commit(catalog_routing_changed)
