"""Scans without a worker: the scanner process (verdicts for the hostile fixtures, and `error` for
a crash, a timeout or an unreadable folder), recording a scan, the `require_scan` label policy, the
scan API, rescans and the SCAN_LLM_MODEL start-up check. tests/registry/test_scan_pipeline.py runs
the whole path through a real worker."""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from registry.checks import scan_llm_model_is_allowed
from registry.models import AuditLog, LabelChange, LabelHistory, ScanStatus, SkillScan, VersionAttestation
from registry.scanning.identity import rulepack_digest, scanner_version
from registry.scanning.runner import ScanOutcome, engine_command, scan_folder
from registry.scanning.verdicts import verdict_for
from registry.services.audit import Actor
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from registry.services.scans import latest_verdict, scan_record, scan_run, versions_rescan
from tests.factories import publish, user_with_role

HOSTILE = Path(__file__).resolve().parent / "hostile_skills"
HOSTILE_SKILLS = sorted(path.name for path in HOSTILE.iterdir() if path.is_dir())
BUNDLED = Path(__file__).resolve().parent.parent.parent / "skills"
BUNDLED_SKILLS = sorted(path.parent.name for path in BUNDLED.glob("*/SKILL.md"))
# A scanner process that answers its start-up line, then dies at the first scan.
CRASHING = [sys.executable, "-c", "import sys; print('{}', flush=True); sys.stdin.readline(); sys.exit(3)"]
# One that never answers a scan.
HANGING = [sys.executable, "-c", "import sys, time; print('{}', flush=True); sys.stdin.readline(); time.sleep(600)"]

FINDING = {
    "analyzer": "static",
    "rule_id": "DATA_EXFIL_HTTP_POST",
    "severity": "CRITICAL",
    "category": "data_exfiltration",
    "title": "HTTP POST request that may send data externally",
    "file": "scripts/sync.py",
    "line": 2,
    "excerpt": "requests.post(URL, data=secrets)",
    "explanation": "Sends data to a remote host.",
}


def test_hostile_fixture_set_is_large_enough_to_mean_something():
    assert len(HOSTILE_SKILLS) >= 8


@pytest.mark.parametrize("name", HOSTILE_SKILLS)
def test_every_hostile_skill_gets_a_verdict_worse_than_clean(name):
    outcome = scan_folder(HOSTILE / name, timeout=120)
    assert outcome.verdict in ("review", "warn", "malicious"), (outcome.verdict, outcome.reason)
    serious = [f for f in outcome.findings if f["severity"] in ("CRITICAL", "HIGH", "MEDIUM")]
    assert serious and all(f["rule_id"] and f["file"] for f in serious)
    assert outcome.scanner_version == scanner_version()
    assert outcome.rulepack_digest == rulepack_digest()
    # Offline analyzers only: no LLM analyzer without SCAN_LLM_MODEL.
    assert "static_analyzer" in outcome.analyzers and not any("llm" in name for name in outcome.analyzers)


@pytest.mark.parametrize("name", BUNDLED_SKILLS)
def test_every_bundled_skill_scans_clean(name):
    # The registry's own skills, served to every agent: a finding on one is a false positive every
    # user sees (tool-call-error-recovery once read "do not tell the user ...", a concealment rule).
    outcome = scan_folder(BUNDLED / name, timeout=120)
    assert outcome.verdict == "clean", [(f["severity"], f["rule_id"], f["file"], f["line"]) for f in outcome.findings]


def test_findings_point_at_the_line_in_skill_md_not_in_its_body():
    outcome = scan_folder(HOSTILE / "meeting-helper", timeout=120)
    lines = (HOSTILE / "meeting-helper" / "SKILL.md").read_text().splitlines()
    text = "\n".join(lines)
    # Findings quoting the file (some quote a description of what they saw instead).
    quoting = [f for f in outcome.findings if f["file"] == "SKILL.md" and f["excerpt"] and f["excerpt"].strip() in text]
    assert quoting
    for finding in quoting:
        assert finding["excerpt"].splitlines()[0].strip() in lines[finding["line"] - 1]


def test_a_scanner_that_crashes_is_an_error_never_clean(tmp_path):
    outcome = scan_folder(tmp_path, timeout=30, command=CRASHING)
    assert outcome.verdict == "error"
    assert "exited with status 3" in outcome.reason


def test_a_scan_past_its_timeout_is_an_error_and_the_scanner_is_killed(tmp_path):
    outcome = scan_folder(tmp_path, timeout=0.5, command=HANGING)
    assert outcome.verdict == "error"
    assert "did not finish scanning within 0.5 seconds" in outcome.reason


def test_a_folder_the_scanner_cannot_read_is_an_error(tmp_path):
    outcome = scan_folder(tmp_path / "missing", timeout=120, command=engine_command())
    assert outcome.verdict == "error"
    assert "does not exist" in outcome.reason


def test_the_worst_severity_decides_the_verdict():
    assert verdict_for([]) == "clean"
    assert verdict_for(["LOW", "INFO"]) == "clean"
    assert verdict_for(["LOW", "MEDIUM"]) == "review"
    assert verdict_for(["MEDIUM", "HIGH"]) == "warn"
    assert verdict_for(["HIGH", "CRITICAL", "INFO"]) == "malicious"


# --- recording, and the label policy ------------------------------------------------------


def _scanned(version, verdict: str, findings=(), reason: str = ""):
    scan = SkillScan.objects.create(version=version, status=ScanStatus.RUNNING)
    outcome = ScanOutcome(
        verdict=verdict,
        reason=reason,
        findings=list(findings),
        scanner_version=scanner_version(),
        rulepack_digest=rulepack_digest(),
        analyzers=["static_analyzer"],
    )
    return scan_record(scan=scan, outcome=outcome, duration=dt.timedelta(milliseconds=5))


@pytest.fixture
def two_versions(db):
    first = publish("scanned-skill").version
    second = publish("scanned-skill", body="Now with a sync script.\n").version
    return first, second


@pytest.mark.django_db
def test_publishing_queues_a_scan_and_waits_for_none(two_versions):
    first, second = two_versions
    assert [scan.status for scan in second.scans.all()] == [ScanStatus.QUEUED]
    assert latest_verdict(second) is None


@pytest.mark.django_db
def test_history_keeps_every_scan_and_the_newest_decides(two_versions):
    _, version = two_versions
    _scanned(version, "malicious", [FINDING])
    _scanned(version, "clean")
    assert latest_verdict(version) == "clean"
    assert version.scans.filter(status=ScanStatus.DONE).count() == 2
    assert AuditLog.objects.filter(action="version.scan").count() == 2


@pytest.mark.django_db
def test_require_scan_refuses_a_move_to_a_version_over_the_verdict_naming_scan_and_the_findings(api, two_versions):
    first, second = two_versions
    label_policy_set(label="production", roles=["admin", "author"], require_scan={"max_verdict": "review"})
    _scanned(first, "review")
    _scanned(second, "malicious", [FINDING])
    assert api.put("/api/v1/skills/scanned-skill/labels/production", {"version": 1}, format="json").status_code == 200

    refused = api.put("/api/v1/skills/scanned-skill/labels/production", {"version": 2}, format="json")

    assert refused.status_code == 409
    body = refused.json()
    assert "scan" in body["detail"]
    (check,) = body["unmet"]
    assert check["check"] == "scan" and check["got"] == "malicious" and check["wanted"] == {"max_verdict": "review"}
    assert check["findings"][0]["rule_id"] == "DATA_EXFIL_HTTP_POST"
    assert check["findings"][0]["file"] == "scripts/sync.py" and check["findings"][0]["line"] == 2


@pytest.mark.django_db
@pytest.mark.parametrize("verdict", [None, "error"])
def test_require_scan_treats_no_scan_and_an_error_as_unmet(api, two_versions, verdict):
    _, second = two_versions
    label_policy_set(label="production", roles=["admin"], require_scan={"max_verdict": "malicious"})
    if verdict:
        _scanned(second, verdict, reason="the scanner process exited with status 3 while scanning")
    refused = api.put("/api/v1/skills/scanned-skill/labels/production", {"version": 2}, format="json")
    assert refused.status_code == 409
    assert refused.json()["unmet"][0]["check"] == "scan"
    assert refused.json()["unmet"][0]["got"] == verdict


@pytest.mark.django_db
def test_an_admin_overrides_require_scan_with_a_reason_recorded(two_versions):
    _, second = two_versions
    skill = second.skill
    label_policy_set(label="production", roles=["admin"], require_scan={"max_verdict": "clean"})
    _scanned(second, "warn", [dict(FINDING, severity="HIGH")])
    admin = user_with_role("admin")

    label_move(
        skill=skill,
        label="production",
        version_number=2,
        actor=Actor(user=admin),
        role="admin",
        override_reason="False positive",
    )

    history = LabelHistory.objects.get(skill=skill, label="production")
    assert history.kind == LabelChange.OVERRIDE and history.reason == "False positive"
    assert history.unmet[0]["check"] == "scan" and history.unmet[0]["got"] == "warn"
    assert AuditLog.objects.filter(action="label.override").exists()


@pytest.mark.django_db
def test_require_scan_is_checked_and_named_when_set(api):
    refused = api.put(
        "/api/v1/label-policies/production",
        {"roles": ["admin"], "require_scan": {"max_verdict": "error"}},
        format="json",
    )
    assert refused.status_code == 400
    assert "max_verdict" in refused.content.decode()
    saved = api.put(
        "/api/v1/label-policies/production",
        {"roles": ["admin"], "require_scan": {"max_verdict": "review"}},
        format="json",
    )
    assert saved.status_code == 200 and saved.json()["require_scan"] == {"max_verdict": "review"}


# --- the API, rescans, the start-up check --------------------------------------------------


@pytest.mark.django_db
def test_the_scan_api_gives_verdict_findings_and_history(api, two_versions):
    _, second = two_versions
    _scanned(second, "malicious", [FINDING])
    body = api.get("/api/v1/skills/scanned-skill/versions/2/scan").json()
    assert body["verdict"] == "malicious" and body["pending"] is True  # the publish's scan is still queued
    assert body["scanner_version"] == scanner_version() and body["rulepack_digest"] == rulepack_digest()
    assert body["findings"][0] | {} == {**FINDING}
    assert [item["status"] for item in body["history"]] == ["done", "queued"]
    assert api.get("/api/v1/skills/scanned-skill/versions/1/scan").json()["verdict"] is None
    assert api.get("/api/v1/skills/scanned-skill/versions/9/scan").status_code == 404


@pytest.mark.django_db
def test_rescan_queues_served_versions_whose_scan_is_by_another_scanner(two_versions, admin_user):
    first, second = two_versions
    skill = first.skill
    SkillScan.objects.all().delete()  # the publishes' scans: as if done long ago
    label_move(skill=skill, label="production", version_number=1, actor=Actor(user=admin_user), role="admin")
    old = _scanned(first, "clean")
    SkillScan.objects.filter(pk=old.pk).update(scanner_version="2.2.0")

    queued = versions_rescan()

    assert [scan.version_id for scan in queued] == [first.pk]  # v2 is served by no label
    assert versions_rescan() == []  # v1 has a scan queued now
    _scanned(second, "clean")
    SkillScan.objects.filter(status=ScanStatus.QUEUED).delete()
    call_command("skills", "rescan", "--all")
    assert SkillScan.objects.filter(status=ScanStatus.QUEUED, trigger="rescan").count() == 2


def test_scan_llm_model_must_be_one_of_agent_models(settings):
    settings.AGENT_MODELS = ["offline", "openai/gpt-4o-mini"]
    settings.SCAN_LLM_MODEL = ""
    assert scan_llm_model_is_allowed(None) == []
    settings.SCAN_LLM_MODEL = "anthropic/claude-x"
    (error,) = scan_llm_model_is_allowed(None)
    assert error.id == "registry.E010" and "AGENT_MODELS" in error.msg
    settings.SCAN_LLM_MODEL = "offline"
    assert scan_llm_model_is_allowed(None)[0].id == "registry.E011"
    settings.SCAN_LLM_MODEL = "openai/gpt-4o-mini"
    assert scan_llm_model_is_allowed(None) == []


@pytest.mark.django_db
def test_a_scan_that_times_out_is_recorded_as_error_with_the_reason(two_versions, settings):
    _, second = two_versions
    settings.SCAN_TIMEOUT_SECONDS = 0.001
    (queued,) = second.scans.all()

    scan = scan_run(scan_id=queued.pk)

    assert scan is not None and scan.status == ScanStatus.DONE
    assert scan.verdict == "error" and "did not finish scanning within 0.001 seconds" in scan.reason
    assert latest_verdict(second) == "error"
    assert scan_run(scan_id=queued.pk) is None  # done: nothing left to run


@pytest.mark.django_db
def test_a_recorded_verdict_is_signed_into_the_versions_attestation(two_versions):
    """The signed release statement says what the scan found, from the same transaction on."""
    _, second = two_versions
    _scanned(second, "review", [dict(FINDING, severity="MEDIUM")])
    envelope = VersionAttestation.objects.get(version=second).envelope
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["predicate"]["scan"]["verdict"] == "review"
    assert statement["predicate"]["scan"]["scanner"] == scanner_version()
