"""The registry's state: the generation every cache is keyed by, and the change log that moves
the read model forward."""

from __future__ import annotations

from django.db import models


class RegistryState(models.Model):
    """One row whose `generation` grows with every registry write (see readmodel/generation.py)."""

    generation = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"generation {self.generation}"


class RegistryChange(models.Model):
    """What one generation changed, written in the same transaction as the bump, so a process
    holding a resolve snapshot of an earlier generation re-reads only that (registry/readmodel/snapshot.py)."""

    class Scope(models.TextChoices):
        SKILL = "skill", "a skill"  # a publish, label move or enable/disable of `skill_name`
        RULES = "rules", "the rules"
        ALL = "all", "anything"  # processes rebuild their snapshots

    generation = models.PositiveBigIntegerField(db_index=True)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    skill_name = models.CharField(max_length=128, blank=True)

    def __str__(self) -> str:
        return f"generation {self.generation}: {self.scope} {self.skill_name}".rstrip()
