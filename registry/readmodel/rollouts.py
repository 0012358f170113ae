"""Weighted sticky rollouts: which side of a label's rollout a request's subject is on.

A rollout keeps a label on its stable version and sends `weight`% of subjects to the canary.
The subject is what the caller says it is (resolve's `context.subject`, a read's `subject`
parameter), else the conversation (a turn), else the token or user. Each subject has a bucket
in [0, 100) from sha256(skill, label, canary version, subject) and reads the canary iff its
bucket is below the weight: the same subject always gets the same side for the same rollout,
raising the weight only moves subjects from stable to canary, and a new canary reshuffles.

The canary side is expressed as pins ({skill name: canary version}), so every reader that
takes pins (the snapshot, resolve and its result cache, the runtime's store, discovery) serves
it without a path of its own, and its caches are keyed by the pins — the bucket side — never by
the subject.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from registry.models import Label
from registry.readmodel.effective import requested_label
from registry.readmodel.generation import current_generation
from registry.readmodel.memo import GenerationMemo
from registry.readmodel.snapshot import registry_snapshot

SUBJECT_MAX_CHARS = 200


@dataclass(frozen=True)
class ActiveRollout:
    skill_id: int
    skill: str
    source: str
    label: str
    stable: int
    canary: int
    weight: int


def subject_bucket(*, skill: str, label: str, canary: int, subject: str) -> int:
    """The subject's bucket in [0, 100) for this rollout: a stable hash (sha256), the same in
    every process and release, unlike Python's salted hash()."""
    digest = hashlib.sha256(f"{skill}\x00{label}\x00{canary}\x00{subject}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def rollout_side_is_canary(rollout: ActiveRollout, subject: str) -> bool:
    bucket = subject_bucket(skill=rollout.skill, label=rollout.label, canary=rollout.canary, subject=subject)
    return bucket < rollout.weight


_ROLLOUTS: GenerationMemo[dict[tuple[str, str], ActiveRollout]] = GenerationMemo(maxsize=16)


def rollouts_active(*, label: str | None = None, generation: int | None = None) -> dict[tuple[str, str], ActiveRollout]:
    """{(skill name, source): its active rollout} at the label a request reads at (no label:
    production). Every rollout change is a label write that bumps the generation, so one query
    per label and generation answers every request."""
    name = requested_label(label)
    if name == "latest":
        return {}
    generation = current_generation() if generation is None else generation
    found = _ROLLOUTS.get((generation, name))
    if found is None:
        rows = Label.objects.filter(name=name, canary_version__isnull=False, weight__gt=0, skill__enabled=True)
        fields = ("skill_id", "skill__name", "skill__source", "version__number", "canary_version__number", "weight")
        found = {
            (row["skill__name"], row["skill__source"]): ActiveRollout(
                skill_id=row["skill_id"],
                skill=row["skill__name"],
                source=row["skill__source"],
                label=name,
                stable=row["version__number"],
                canary=row["canary_version__number"],
                weight=row["weight"],
            )
            for row in rows.values(*fields)
        }
        _ROLLOUTS.put((generation, name), found)
    return found


def _winner_rollouts(label: str | None, generation: int | None) -> dict[str, ActiveRollout]:
    """The rollouts of the skills that win their names at `label` (a rollout on a shadowed
    skill changes nothing a request for the registry's skills reads)."""
    generation = current_generation() if generation is None else generation
    active = rollouts_active(label=label, generation=generation)
    if not active:
        return {}
    by_name = registry_snapshot(label=label, generation=generation).by_name
    return {
        name: rollout
        for (name, _), rollout in active.items()
        if name in by_name and by_name[name].skill_id == rollout.skill_id
    }


def subject_pins(
    *, label: str | None, subject: str | None, pins: Mapping[str, int] | None = None, generation: int | None = None
) -> dict[str, int]:
    """The pins a request for the registry's skills reads with: its own (a pin wins over a
    rollout), plus the canary version of every rollout at `label` that puts `subject` on the
    canary side. Without a subject every rollout's stable side is served."""
    chosen = dict(pins or {})
    if not subject:
        return chosen
    for name, rollout in _winner_rollouts(label, generation).items():
        if name not in chosen and rollout_side_is_canary(rollout, subject):
            chosen[name] = rollout.canary
    return chosen


def canary_names(*, label: str | None, pins: Mapping[str, int], generation: int | None = None) -> frozenset[str]:
    """The skills `pins` read at their rollout's canary: what a read says it served."""
    if not pins:
        return frozenset()
    rollouts = _winner_rollouts(label, generation)
    return frozenset(name for name, number in pins.items() if name in rollouts and rollouts[name].canary == number)


def subject_canary(*, name: str, source: str | None, label: str | None, subject: str | None) -> int | None:
    """The canary version a request naming one skill (the REST reads: the skill winning `name`,
    or the one in `source`) gets at `label`, or None for the stable side (no rollout there, or
    the subject's bucket is at or above the weight)."""
    if not subject:
        return None
    if source:
        rollout = rollouts_active(label=label).get((name, source))
    else:
        rollout = _winner_rollouts(label, None).get(name)
    if rollout is None or not rollout_side_is_canary(rollout, subject):
        return None
    return rollout.canary


def subject_of(*, given: object = None, conversation: object = None, token: object = None) -> str | None:
    """The subject a request is bucketed by: the caller's own when it gives one, else the
    conversation, else the token (or signed-in user). Kinds are prefixed so a conversation id
    and a token id that happen to be equal are different subjects."""
    if given not in (None, ""):
        return str(given)[:SUBJECT_MAX_CHARS]
    if conversation not in (None, ""):
        return f"conversation:{conversation}"
    if token not in (None, ""):
        return f"token:{token}"
    return None
