"""What one manifest adds to and drops from another: the capability diff."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry.skillformat.capabilities.model import CREDENTIAL, GATED_KINDS, KIND_TITLES, KINDS, Manifest


@dataclass(frozen=True)
class CapabilityChange:
    """One capability (kind and value) a version gained or lost, with where it appears."""

    kind: str
    value: str
    places: tuple[tuple[str, int], ...]  # (file, line), the first few
    sign: str  # "+" or "−"

    @property
    def gated(self) -> bool:
        return self.kind in GATED_KINDS

    @property
    def where(self) -> str:
        shown = ", ".join(f"{file}:{line}" for file, line in self.places[:3])
        more = len(self.places) - 3
        return shown + (f", +{more} more" if more > 0 else "")

    @property
    def phrase(self) -> str:
        """`network: api.example.com`, `reads GITHUB_TOKEN`."""
        title = KIND_TITLES[self.kind]
        return f"{title} {self.value}" if self.kind == CREDENTIAL else f"{title}: {self.value}"

    @property
    def text(self) -> str:
        return f"{self.sign} {self.phrase} ({self.where})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value,
            "places": [{"file": file, "line": line} for file, line in self.places],
            "text": self.text,
            "gated": self.gated,
        }


@dataclass(frozen=True)
class CapabilityDiff:
    added: tuple[CapabilityChange, ...] = ()
    removed: tuple[CapabilityChange, ...] = ()
    changes: tuple[CapabilityChange, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "changes", self.added + self.removed)

    @property
    def gated_added(self) -> tuple[CapabilityChange, ...]:
        """What the new version adds that a `new_capabilities` policy asks an admin about."""
        return tuple(change for change in self.added if change.gated)


PLACES_MAX = 20


def _grouped(manifest: Manifest) -> dict[tuple[str, str], list[tuple[str, int]]]:
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for entry in manifest.entries:
        places = groups.setdefault(entry.key, [])
        if len(places) < PLACES_MAX:
            places.append((entry.file, entry.line))
    return groups


def capabilities_diff(*, old: Manifest | None, new: Manifest) -> CapabilityDiff:
    """What `new` has that `old` lacks (`+`) and the reverse (`−`), by kind and value (a host, a
    command, a variable): a URL moved to another line or file is no change."""
    before, after = _grouped(old) if old is not None else {}, _grouped(new)

    def order(key: tuple[str, str]) -> tuple[int, str]:
        return (KINDS.index(key[0]), key[1])

    added = tuple(
        CapabilityChange(k, v, tuple(after[(k, v)]), "+") for k, v in sorted(set(after) - set(before), key=order)
    )
    removed = tuple(
        CapabilityChange(k, v, tuple(before[(k, v)]), "−") for k, v in sorted(set(before) - set(after), key=order)
    )
    return CapabilityDiff(added=added, removed=removed)
