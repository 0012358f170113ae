"""Scans end to end: a publish commits, the `scans` queue's worker (a real Celery worker) scans the
version and stores the verdict and findings, which the API, MCP `_meta`, the discovery index and a
`skill.scanned` webhook then carry.

The module starts its own worker: the default test worker does not read the scans queue (every
publish in other modules would otherwise start the scanner in it), and this one delivers to a
loopback receiver, so it runs with WEBHOOK_ALLOW_PRIVATE_ADDRESSES on."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings

from registry.mcp.catalog import SCAN_META, mcp_skill_catalog
from registry.models import ScanStatus, SkillScan
from registry.services.audit import SYSTEM, Actor
from registry.services.labels import label_move
from registry.services.skills import skill_version_publish
from registry.services.webhooks import webhook_create
from registry.skillformat.bundle import read_folder
from tests.worker import WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

HOSTILE = Path(__file__).resolve().parent / "hostile_skills"


class Receiver:
    def __init__(self) -> None:
        self.payloads: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.payloads.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture(scope="module")
def receiver():
    running = Receiver()
    yield running
    running.server.shutdown()
    running.server.server_close()


@pytest.fixture(scope="module")
def scan_worker(worker_exits, django_db_blocker):
    queues = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.WEBHOOK_QUEUE, settings.SCAN_QUEUE]
    process = WorkerProcess(queues=queues, extra_env={"WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true"}).start()
    yield process
    worker_exits(process)


def _scan_done(version) -> SkillScan | None:
    return SkillScan.objects.filter(version=version, status=ScanStatus.DONE).first()


def test_a_published_hostile_version_is_scanned_in_the_background_and_served_with_its_verdict(
    scan_worker, receiver, api, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.DISCOVERY_LABEL = "production"
    webhook_create(url=receiver.url, events=["skill.scanned"])

    published = skill_version_publish(bundle=read_folder(HOSTILE / "notes-sync"), actor=SYSTEM)
    version = published.version
    # Publishing returned with the scan queued, not done.
    assert SkillScan.objects.filter(version=version).exclude(status=ScanStatus.DONE).exists()

    scan = wait_for(
        lambda: _scan_done(version), message="the scans worker to scan notes-sync v1\n" + scan_worker.output()
    )
    assert scan.verdict in ("warn", "malicious"), scan.reason
    assert scan.scanner_version and len(scan.rulepack_digest) == 64
    exfil = scan.findings.filter(file="scripts/sync.py").exclude(line=None)
    assert exfil.exists() and all(f.rule_id and f.severity and f.explanation for f in exfil)

    body = api.get("/api/v1/skills/notes-sync/versions/1/scan").json()
    assert body["verdict"] == scan.verdict and body["pending"] is False
    assert {f["rule_id"] for f in body["findings"]} == set(scan.findings.values_list("rule_id", flat=True))

    catalog = mcp_skill_catalog()
    entry = catalog.by_name["notes-sync"]
    assert catalog.as_wire(entry)["_meta"][SCAN_META]["verdict"] == scan.verdict

    label_move(skill=version.skill, label="production", version_number=1, actor=Actor(via="test"), role="admin")
    index = api.get("/.well-known/agent-skills/index.json").json()
    (listed,) = [item for item in index["skills"] if item["name"] == "notes-sync"]
    assert listed["scan"]["verdict"] == scan.verdict

    delivered = wait_for(
        lambda: [p for p in receiver.payloads if p["event"] == "skill.scanned" and p["skill"] == "notes-sync"],
        message="the skill.scanned webhook",
    )
    assert delivered[0]["version"] == 1 and delivered[0]["scan"]["verdict"] == scan.verdict
    assert delivered[0]["scan"]["findings"]


def test_publishing_does_not_wait_for_the_scanner(scan_worker):
    """The publish commits and returns while the scan is still queued or running."""
    started = time.monotonic()
    result = skill_version_publish(bundle=read_folder(HOSTILE / "repo-stats"), actor=SYSTEM)
    elapsed = time.monotonic() - started
    scan = SkillScan.objects.get(version=result.version)
    assert scan.status in (ScanStatus.QUEUED, ScanStatus.RUNNING) or (scan.duration_ms or 0) / 1000 < elapsed
    done = wait_for(lambda: _scan_done(result.version), message="the repo-stats scan")
    assert done.verdict == "malicious"
