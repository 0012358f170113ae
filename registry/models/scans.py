"""Security scans of versions: one row per scan (history keeps every one) and its findings.

A scan is queued when a version is published (or rescanned), run by the `scans` worker, and
written once when it ends (registry/services/scans.py)."""

from __future__ import annotations

from django.db import models

from registry.models.skills import SkillVersion


class ScanVerdict(models.TextChoices):
    """Ordered from harmless to unmet: `error` (the scan could not tell) is never a pass."""

    CLEAN = "clean"
    REVIEW = "review"
    WARN = "warn"
    MALICIOUS = "malicious"
    ERROR = "error"


# A verdict's place in that order: a label policy's `max_verdict` admits every verdict at or below it.
VERDICT_RANK = {verdict: rank for rank, verdict in enumerate(ScanVerdict.values)}


class ScanStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class SkillScan(models.Model):
    """One scan of one version by one scanner version and rule pack. `verdict` is blank until
    the scan is done; `reason` says why a verdict is `error`."""

    version = models.ForeignKey(SkillVersion, on_delete=models.CASCADE, related_name="scans")
    status = models.CharField(max_length=8, choices=ScanStatus.choices, default=ScanStatus.QUEUED)
    trigger = models.CharField(max_length=16, default="publish")  # publish, rescan
    scanner_version = models.CharField(max_length=64, blank=True)
    rulepack_digest = models.CharField(max_length=64, blank=True)
    analyzers = models.JSONField(default=list)
    verdict = models.CharField(max_length=10, choices=ScanVerdict.choices, blank=True)
    reason = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["version", "-id"]
        indexes = [models.Index(fields=["version", "status", "-id"], name="scan_version_status")]

    def __str__(self) -> str:
        return f"scan {self.pk} of {self.version_id}: {self.verdict or self.status}"


class ScanFinding(models.Model):
    """What an analyzer reported: the rule, where (file and line; SKILL.md is a file too), the
    excerpt it matched and the scanner's explanation."""

    scan = models.ForeignKey(SkillScan, on_delete=models.CASCADE, related_name="findings")
    analyzer = models.CharField(max_length=64)
    rule_id = models.CharField(max_length=200)
    severity = models.CharField(max_length=10)  # CRITICAL, HIGH, MEDIUM, LOW, INFO
    category = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=500, blank=True)
    file = models.CharField(max_length=1024, blank=True)
    line = models.PositiveIntegerField(null=True, blank=True)
    excerpt = models.TextField(blank=True)
    explanation = models.TextField(blank=True)

    class Meta:
        ordering = ["scan", "id"]

    def __str__(self) -> str:
        return f"{self.rule_id} {self.file}:{self.line}"
