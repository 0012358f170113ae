"""Reads of versions' scans: the newest finished scan of a version (what gates and pages show),
its history, and the summary every interface gives out (API, MCP, discovery, webhook)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, prefetch_related_objects

from registry.models import ScanFinding, ScanStatus, SkillScan, SkillVersion
from registry.scanning.verdicts import SEVERITY_RANK
from registry.selectors.versions import text_lines


def scan_latest(version: SkillVersion) -> SkillScan | None:
    """The version's newest finished scan (None: not scanned yet)."""
    return SkillScan.objects.filter(version=version, status=ScanStatus.DONE).order_by("-id").first()


def scan_pending(version: SkillVersion) -> bool:
    return SkillScan.objects.filter(version=version, status__in=[ScanStatus.QUEUED, ScanStatus.RUNNING]).exists()


def scans_latest(version_ids: Iterable[int]) -> dict[int, SkillScan]:
    """The newest finished scan of each of these versions, by version id, in two queries."""
    newest = (
        SkillScan.objects.filter(version_id__in=list(version_ids), status=ScanStatus.DONE)
        .values("version_id")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    return {scan.version_id: scan for scan in SkillScan.objects.filter(pk__in=list(newest))}


def scans_latest_with_findings(version_ids: Iterable[int]) -> dict[int, SkillScan]:
    """`scans_latest`, each scan with its findings read too (`scan_findings` then reads none), in three queries."""
    scans = scans_latest(version_ids)
    prefetch_related_objects(list(scans.values()), "findings")
    return scans


def scans_latest_served(pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], SkillScan]:
    """The newest finished scan of each (skill id, version number), as the read model names
    served versions, in two queries."""
    wanted = set(pairs)
    newest = (
        SkillScan.objects.filter(version__skill_id__in={skill for skill, _ in wanted}, status=ScanStatus.DONE)
        .values("version__skill_id", "version__number")
        .annotate(last=Max("id"))
    )
    ids = [row["last"] for row in newest if (row["version__skill_id"], row["version__number"]) in wanted]
    found = SkillScan.objects.filter(pk__in=ids).select_related("version")
    return {(scan.version.skill_id, scan.version.number): scan for scan in found}


def scan_history(version: SkillVersion) -> list[SkillScan]:
    return list(SkillScan.objects.filter(version=version).order_by("-id"))


def scan_findings(scan: SkillScan) -> list[ScanFinding]:
    """Worst first, then by file and line."""
    findings = list(scan.findings.all())
    return sorted(findings, key=lambda f: (SEVERITY_RANK.get(f.severity, 9), f.file, f.line or 0, f.id))


def _time(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def finding_summary(finding: ScanFinding) -> dict[str, Any]:
    return {
        "rule_id": finding.rule_id,
        "severity": finding.severity,
        "analyzer": finding.analyzer,
        "category": finding.category,
        "title": finding.title,
        "file": finding.file,
        "line": finding.line,
        "excerpt": finding.excerpt,
        "explanation": finding.explanation,
    }


def scan_summary(scan: SkillScan | None, *, findings: bool = True) -> dict[str, Any]:
    """A scan as the API, MCP, discovery and webhooks give it; `verdict` None: not scanned yet."""
    if scan is None:
        return {"verdict": None, "status": "not_scanned"}
    summary: dict[str, Any] = {
        "verdict": scan.verdict or None,
        "status": scan.status,
        "reason": scan.reason,
        "scanner_version": scan.scanner_version,
        "rulepack_digest": scan.rulepack_digest,
        "analyzers": scan.analyzers,
        "scanned_at": _time(scan.finished_at),
    }
    if findings:
        summary["findings"] = [finding_summary(f) for f in scan_findings(scan)]
    else:
        summary["finding_count"] = scan.findings.count()
    return summary


def scan_brief(scan: SkillScan | None) -> dict[str, Any]:
    """The verdict alone, where a listing carries it (discovery, MCP): the findings are one
    request away (`GET /api/v1/skills/{name}/versions/{n}/scan`)."""
    if scan is None:
        return {"verdict": None}
    brief: dict[str, Any] = {"verdict": scan.verdict, "scanned_at": _time(scan.finished_at)}
    if scan.reason:
        brief["reason"] = scan.reason
    return brief


def version_scan_state(version: SkillVersion) -> dict[str, Any]:
    """The newest finished scan's summary, and whether a newer scan is queued or running."""
    summary = scan_summary(scan_latest(version))
    summary["pending"] = scan_pending(version)
    return summary


@dataclass(frozen=True)
class ExcerptLine:
    number: int
    text: str
    hit: bool


@dataclass(frozen=True)
class FindingInContext:
    """A finding with the lines around it read from the version's own file (the hit marked);
    `lines` is empty when the finding names no line or the file is not text."""

    finding: ScanFinding
    lines: list[ExcerptLine]


CONTEXT_LINES = 2


def _file_lines(version: SkillVersion, path: str) -> list[str] | None:
    if path == "SKILL.md":
        return version.skill_md.splitlines()
    row = version.files.select_related("blob").filter(path=path).first()
    return text_lines(bytes(row.blob.content)) if row is not None else None


def scan_findings_in_context(version: SkillVersion, scan: SkillScan) -> list[FindingInContext]:
    """The scan's findings, worst first, each with its lines in the file (read once per file)."""
    files: dict[str, list[str] | None] = {}
    shown = []
    for finding in scan_findings(scan):
        lines: list[ExcerptLine] = []
        if finding.file and finding.line:
            if finding.file not in files:
                files[finding.file] = _file_lines(version, finding.file)
            text = files[finding.file] or []
            if finding.line <= len(text):
                first = max(1, finding.line - CONTEXT_LINES)
                last = min(len(text), finding.line + CONTEXT_LINES)
                lines = [ExcerptLine(n, text[n - 1].rstrip("\r\n"), n == finding.line) for n in range(first, last + 1)]
        shown.append(FindingInContext(finding=finding, lines=lines))
    return shown


@dataclass(frozen=True)
class ScanView:
    """What a page shows of a version's scan: the newest finished one, its findings in context,
    and whether another is queued or running."""

    version: SkillVersion
    scan: SkillScan | None
    pending: bool
    findings: list[FindingInContext]

    @property
    def verdict(self) -> str:
        return self.scan.verdict if self.scan is not None else ""


def version_scan_view(version: SkillVersion) -> ScanView:
    scan = scan_latest(version)
    findings = scan_findings_in_context(version, scan) if scan is not None else []
    return ScanView(version=version, scan=scan, pending=scan_pending(version), findings=findings)
