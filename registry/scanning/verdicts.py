"""From the scanner's findings to the registry's verdict: the worst severity decides."""

from __future__ import annotations

from collections.abc import Iterable

# CRITICAL: malicious; HIGH: warn; MEDIUM: review; LOW and INFO (hygiene: an unpinned
# dependency, no license) do not stop a version being clean.
SEVERITY_VERDICT = {"CRITICAL": "malicious", "HIGH": "warn", "MEDIUM": "review"}
SEVERITY_RANK = {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 2, "LOW": 3, "INFO": 4}
ORDER = ("clean", "review", "warn", "malicious", "error")


def verdict_for(severities: Iterable[str]) -> str:
    worst = "clean"
    for severity in severities:
        verdict = SEVERITY_VERDICT.get(severity.upper(), "clean")
        if ORDER.index(verdict) > ORDER.index(worst):
            worst = verdict
    return worst
