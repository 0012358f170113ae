"""Scanning versions: queue a scan (on publish, or a rescan), run it on the `scans` worker, and
record its verdict and findings.

A scan is a row from the moment it is queued, so a task that finds no queued row has nothing to
do (its version was deleted, or another worker took it). The scanner runs outside any
transaction, in a process of its own with a hard timeout (registry/scanning/runner.py); a crash,
a timeout or a bundle it cannot read is recorded as `error` with the reason, never `clean`.

A recorded verdict re-issues the version's signed release statement in the same transaction, so
the attestation never says less than the scan does (registry/services/attestations.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import tempfile
from pathlib import Path

import kombu.exceptions
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from registry.models import Label, ScanFinding, ScanStatus, SkillScan, SkillVersion, WebhookEvent
from registry.scanning.identity import rulepack_digest, scanner_version
from registry.scanning.runner import STARTUP_SECONDS, ScanOutcome, engine_command, scan_folder
from registry.selectors.scans import scan_latest, scan_summary
from registry.selectors.versions import version_bundle
from registry.services.attestations import record_scan_verdict
from registry.services.audit import Actor, audit_record
from registry.services.generation import registry_changed
from registry.services.webhooks import webhook_event_emit
from registry.skillformat.bundle import write_folder

logger = logging.getLogger(__name__)

SCAN_TASK = "registry.tasks.version_scan_task"
SCANNER = Actor(via="scanner")


def latest_verdict(version: SkillVersion) -> str | None:
    """The verdict of the version's newest finished scan (`clean` … `error`), None before one."""
    scan = scan_latest(version)
    return scan.verdict if scan is not None else None


def scan_queue(*, version: SkillVersion, trigger: str = "publish") -> SkillScan:
    """Queue a scan of `version`: call inside the transaction that makes it (a publish); the
    worker is told once it commits. Publishing never waits for the scan."""
    scan = SkillScan.objects.create(version=version, trigger=trigger)
    transaction.on_commit(lambda: _send(scan.pk))
    return scan


def _send(scan_id: int) -> None:
    """With the broker down the row stays queued; the beat's rescan finds it."""
    try:
        current_app.send_task(SCAN_TASK, args=[scan_id])
    except kombu.exceptions.OperationalError:
        logger.warning("could not queue scan %s", scan_id, exc_info=True)


def _stale_before() -> dt.datetime:
    """A running scan older than this lost its worker (a scan is killed at its timeout)."""
    return timezone.now() - dt.timedelta(seconds=settings.SCAN_TIMEOUT_SECONDS + STARTUP_SECONDS + 60)


def scan_claim(*, scan_id: int) -> bool:
    """Take a queued scan (or one whose worker died): False when someone else holds it or it is done."""
    claimable = Q(status=ScanStatus.QUEUED) | Q(status=ScanStatus.RUNNING, started_at__lt=_stale_before())
    return bool(
        SkillScan.objects.filter(claimable, pk=scan_id).update(status=ScanStatus.RUNNING, started_at=timezone.now())
    )


def _scan_version(version: SkillVersion) -> ScanOutcome:
    command = engine_command(llm_model=settings.SCAN_LLM_MODEL, niceness=settings.SCAN_NICENESS)
    env = {"SCAN_LLM_API_BASE": settings.AGENT_API_BASE, "SCAN_LLM_API_KEY": settings.AGENT_API_KEY}
    workdir = Path(tempfile.mkdtemp(prefix="skill-scan-"))
    try:
        folder = workdir / version.skill.name
        try:
            write_folder(version_bundle(version), folder)
        except (OSError, ValueError) as exc:
            return ScanOutcome(verdict="error", reason=f"the bundle could not be unpacked for scanning: {exc}")
        return scan_folder(folder, timeout=settings.SCAN_TIMEOUT_SECONDS, command=command, env=env)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def scan_run(*, scan_id: int) -> SkillScan | None:
    """Run a queued scan and record it; None when there was nothing to run."""
    if not scan_claim(scan_id=scan_id):
        return None
    scan = SkillScan.objects.select_related("version__skill").get(pk=scan_id)
    started = timezone.now()
    try:
        outcome = _scan_version(scan.version)
    except Exception as exc:  # whatever broke, the scan is an error with the reason, never left running
        logger.exception("scan %s failed", scan_id)
        outcome = ScanOutcome(verdict="error", reason=f"the scan failed: {type(exc).__name__}: {exc}"[:2000])
    return scan_record(scan=scan, outcome=outcome, duration=timezone.now() - started)


def scan_record(*, scan: SkillScan, outcome: ScanOutcome, duration: dt.timedelta) -> SkillScan:
    """Write a scan's outcome and findings, sign the verdict into the version's attestation, and
    tell webhooks and the read model."""
    version = scan.version
    with transaction.atomic():
        scan.status = ScanStatus.DONE
        scan.verdict = outcome.verdict
        scan.reason = outcome.reason[:4000]
        scan.scanner_version = outcome.scanner_version[:64]
        scan.rulepack_digest = outcome.rulepack_digest[:64]
        scan.analyzers = outcome.analyzers
        scan.finished_at = timezone.now()
        scan.duration_ms = int(duration.total_seconds() * 1000)
        scan.save()
        ScanFinding.objects.bulk_create(
            ScanFinding(
                scan=scan,
                analyzer=str(f.get("analyzer") or "")[:64],
                rule_id=str(f.get("rule_id") or "")[:200],
                severity=str(f.get("severity") or "")[:10],
                category=str(f.get("category") or "")[:64],
                title=str(f.get("title") or "")[:500],
                file=str(f.get("file") or "")[:1024],
                line=f["line"] if isinstance(f.get("line"), int) and f["line"] > 0 else None,
                excerpt=str(f.get("excerpt") or ""),
                explanation=str(f.get("explanation") or ""),
            )
            for f in outcome.findings
        )
        audit_record(
            actor=SCANNER,
            action="version.scan",
            object_type="skill",
            object_repr=f"{version.skill.name}@{version.skill.source}",
            after={"version": version.number, "verdict": scan.verdict, "findings": len(outcome.findings)},
        )
        # MCP entries and discovery carry the verdict: their cached catalogues must be read again.
        registry_changed(skill=version.skill.name)
        webhook_event_emit(
            event=WebhookEvent.SKILL_SCANNED,
            actor=SCANNER,
            skill=version.skill.name,
            version=version.number,
            extra={"scan": scan_summary(scan, findings=True)},
        )
        record_scan_verdict(version, scan.verdict, scanner=scan.scanner_version or None)
    return scan


def versions_rescan(*, everything: bool = False) -> list[SkillScan]:
    """Queue scans of the versions any label serves (its version and a rollout's canary) whose
    newest scan was made by another scanner version or rule pack, or that have none; with
    `everything`, of every version. A version with a scan already queued or running is skipped.
    The current scanner is the installed package (registry/scanning/identity.py)."""
    scanner, rules = scanner_version(), rulepack_digest()
    if everything:
        versions = SkillVersion.objects.all()
    else:
        served = set(Label.objects.values_list("version_id", flat=True))
        served |= set(Label.objects.exclude(canary_version=None).values_list("canary_version_id", flat=True))
        versions = SkillVersion.objects.filter(pk__in=served)
    busy = set(
        SkillScan.objects.filter(status__in=[ScanStatus.QUEUED, ScanStatus.RUNNING]).values_list(
            "version_id", flat=True
        )
    )
    queued = []
    with transaction.atomic():
        for version in versions.select_related("skill").order_by("pk"):
            if version.pk in busy:
                continue
            latest = scan_latest(version)
            current = latest is not None and latest.scanner_version == scanner and latest.rulepack_digest == rules
            if everything or not current:
                queued.append(scan_queue(version=version, trigger="rescan"))
    return queued


def scans_requeue() -> int:
    """Send again the scans still queued after their worker should have taken them (a broker
    that was down at publish)."""
    ids = list(
        SkillScan.objects.filter(status=ScanStatus.QUEUED, queued_at__lt=_stale_before()).values_list("pk", flat=True)
    )
    for scan_id in ids:
        _send(scan_id)
    return len(ids)
