"""The installed `skill_registry_client` and its `skillreg` script against the registry served by
gunicorn (a real HTTP server process on a free port, on the test database): the cache
revalidating with 304s the server logs, stale answers with the server stopped, the lockfile round
trip, `--frozen`, `push` with base_version, and usage reports in batches."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import skill_registry_client
from skill_registry_client import Client, RegistryUnavailable
from skill_registry_client.transport import Transport

from bench._services import Gunicorn
from registry.models import Skill, TokenScope, UsageEvent
from registry.skillformat.bundle import read_folder
from tests.worker import ROOT, _database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)

SKILLREG = Path(sys.executable).parent / "skillreg"


class Registry:
    """gunicorn serving the app, logging `METHOD PATH STATUS` for every request."""

    def __init__(self) -> None:
        self.log = Path(tempfile.mkstemp(prefix="client-access-", suffix=".log")[1])
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.test_settings",
            "DATABASE_URL": _database_url_for_tests(),
            "API_THROTTLE_RATE": "off",
        }
        args = ("--access-logfile", str(self.log), "--access-logformat", "%(m)s %(U)s %(s)s")
        self.server = Gunicorn(env=env, workers=1, extra_args=args)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def start(self) -> Registry:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def mark(self) -> int:
        return len(self.log.read_text().splitlines())

    def requests(self, path: str, *, since: int, at_least: int = 0) -> list[str]:
        """The requests logged after `since` (a `mark()`) whose path starts with `path`, once there
        are `at_least` (gunicorn logs a request just after answering it)."""
        deadline = time.monotonic() + 10
        while True:
            logged = self.log.read_text().splitlines()[since:]
            lines = [line for line in logged if line.split(" ")[1].startswith(path)]
            if len(lines) >= at_least or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)


@pytest.fixture(scope="module")
def registry(django_db_setup, django_db_blocker):
    server = Registry().start()
    yield server
    server.stop()
    server.log.unlink(missing_ok=True)


@pytest.fixture
def token(make_token):
    return make_token(list(TokenScope.values))


def publish(registry: Registry, token: str, name: str, body: str, *, files=(), base_version=None) -> dict:
    skill_md = f"---\nname: {name}\ndescription: {name} test skill. Use when testing the client.\n---\n{body}\n"
    payload = {"skill_md": skill_md, "files": list(files), "base_version": base_version}
    return Transport(registry.url, token).request("POST", f"skills/{name}/versions", json_body=payload).json()


def skillreg(registry: Registry, token: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SKILL_REGISTRY_URL": registry.url, "SKILL_REGISTRY_TOKEN": token}
    return subprocess.run([str(SKILLREG), *args], env=env, capture_output=True, text=True, timeout=120)


def test_the_tests_use_the_installed_client_not_the_source_folder():
    installed = Path(skill_registry_client.__file__).parent
    source = ROOT / "clients" / "python" / "skill_registry_client"
    assert installed != source
    for module in source.glob("*.py"):
        assert (installed / module.name).read_bytes() == module.read_bytes(), f"reinstall: {module.name} differs"
    assert SKILLREG.exists()


def test_resolve_is_served_from_memory_then_revalidated_with_a_304(registry, token, tmp_path):
    publish(registry, token, "csv-report", "# CSV report\nSummarise CSV files.")
    client = Client(registry.url, token, cache_dir=str(tmp_path), ttl=60)
    start = registry.mark()
    reads = ("/api/v1/resolve", "/api/v1/skills/csv-report/SKILL.md", "/api/v1/skills/csv-report/bundle.zip")

    first = client.resolve("summarise the csv report", toolName="read_file")
    again = client.resolve("summarise the csv report", toolName="read_file")

    assert [s["name"] for s in first.skills] == ["csv-report"]
    assert "csv-report" in first.prompt_block and first.etag and not first.stale
    assert again == first
    assert registry.requests("/api/v1/resolve", since=start, at_least=1) == [
        "POST /api/v1/resolve 200"
    ]  # the second: none

    revalidating = Client(registry.url, token, ttl=0, stale_while_revalidate=0)
    for _ in range(2):
        assert revalidating.resolve("summarise the csv report", toolName="read_file").raw == first.raw
        assert revalidating.skill_md("csv-report").endswith("Summarise CSV files.\n")
        assert [f.path for f in revalidating.files("csv-report")] == ["SKILL.md"]
    logged = [
        line for path in reads for line in registry.requests(path, since=start, at_least=3 if "resolve" in path else 2)
    ]
    assert sorted(logged) == sorted(
        [
            "POST /api/v1/resolve 200",
            "POST /api/v1/resolve 200",
            "GET /api/v1/skills/csv-report/SKILL.md 200",
            "GET /api/v1/skills/csv-report/bundle.zip 200",
            "POST /api/v1/resolve 304",
            "GET /api/v1/skills/csv-report/SKILL.md 304",
            "GET /api/v1/skills/csv-report/bundle.zip 304",
        ]
    )
    assert (revalidating.stats.fetched, revalidating.stats.revalidated) == (3, 3)

    publish(registry, token, "csv-report", "# CSV report\nSummarise CSV files, with totals.", base_version=1)
    changed = revalidating.resolve("summarise the csv report", toolName="read_file")
    assert changed.etag != first.etag and changed.skills[0]["version"] == 2
    assert revalidating.skill_md("csv-report").endswith("with totals.\n")
    assert revalidating.skill_md("csv-report", version=1).endswith("Summarise CSV files.\n")


def test_a_stale_answer_is_revalidated_in_the_background(registry, token):
    publish(registry, token, "swr-skill", "# SWR\nBody.")
    client = Client(registry.url, token, ttl=0, stale_while_revalidate=3600)
    first = client.resolve("swr skill")
    served = client.resolve("swr skill")  # answered from the cache at once; a revalidation runs
    assert served.raw == first.raw and not served.stale
    assert client.stats.background == 1
    client.close()


def test_with_the_registry_stopped_the_last_good_answer_is_served_stale(token, tmp_path):
    registry = Registry().start()
    try:
        publish(registry, token, "offline-skill", "# Offline\nWorks offline.")
        warm = Client(registry.url, token, cache_dir=str(tmp_path / "cache"), ttl=0, stale_while_revalidate=0)
        good = warm.resolve("offline skill please")
        text = warm.skill_md("offline-skill")
        files = warm.files("offline-skill")
    finally:
        registry.stop()

    stale = warm.resolve("offline skill please")
    assert stale.stale and stale.raw == good.raw and stale.etag == good.etag
    assert warm.stats.stale == 1

    # A new process: nothing in memory, the answers on disk.
    restarted = Client(registry.url, token, cache_dir=str(tmp_path / "cache"), ttl=0, stale_while_revalidate=0)
    from_disk = restarted.resolve("offline skill please")
    assert from_disk.stale and from_disk.skills == good.skills
    assert restarted.skill_md("offline-skill") == text
    assert restarted.files("offline-skill") == files

    with pytest.raises(RegistryUnavailable, match="cannot be reached.*Nothing is cached for this request"):
        restarted.resolve("a question never asked")
    with pytest.raises(RegistryUnavailable, match="Nothing is cached"):
        Client(registry.url, token, cache_dir=str(tmp_path / "empty")).skill_md("offline-skill")


def _b64(content: bytes) -> str:
    return base64.b64encode(content).decode()


FILES = [
    {"path": "scripts/run.sh", "content_base64": _b64(b"#!/bin/sh\necho run\n"), "executable": True},
    {"path": "docs/guide.md", "content_base64": _b64(b"# Guide\r\nCRLF kept\r\n"), "executable": False},
    {"path": "data/blob.bin", "content_base64": _b64(bytes(range(256))), "executable": False},
    {"path": "AGENTS.md", "link": "docs/guide.md"},
]


def _tree(folder: Path) -> dict[str, tuple]:
    """path -> (link target or bytes, executable) for everything in the folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[relative] = ("link", os.readlink(path))
        elif path.is_file():
            found[relative] = (path.read_bytes(), bool(path.stat().st_mode & 0o100))
    return found


def test_pull_writes_folders_byte_exact_and_a_lock_that_frozen_installs_again(registry, token, tmp_path):
    published = publish(registry, token, "bundle-skill", "# Bundle\nRun scripts/run.sh.", files=FILES)
    publish(registry, token, "plain-skill", "# Plain\nNothing else.")
    out = tmp_path / "skills"

    done = skillreg(registry, token, "pull", "bundle-skill", "plain-skill", str(out))

    assert done.returncode == 0, done.stderr
    tree = _tree(out / "bundle-skill")
    assert tree["AGENTS.md"] == ("link", "docs/guide.md")
    assert tree["scripts/run.sh"] == (b"#!/bin/sh\necho run\n", True)
    assert tree["docs/guide.md"] == (b"# Guide\r\nCRLF kept\r\n", False)
    assert tree["data/blob.bin"] == (bytes(range(256)), False)
    # The registry reads the pulled folder back as the very bundle it serves.
    assert read_folder(out / "bundle-skill").fingerprint == published["fingerprint"]

    lock = json.loads((out / "skills.lock").read_text())
    entry = lock["skills"]["bundle-skill"]
    assert (entry["version"], entry["fingerprint"], entry["source"]) == (1, published["fingerprint"], "user")
    assert {f["path"]: f["sha256"] for f in entry["files"]} == {
        "SKILL.md": hashlib.sha256((out / "bundle-skill" / "SKILL.md").read_bytes()).hexdigest(),
        "AGENTS.md": hashlib.sha256(b"# Guide\r\nCRLF kept\r\n").hexdigest(),
        "docs/guide.md": hashlib.sha256(b"# Guide\r\nCRLF kept\r\n").hexdigest(),
        "scripts/run.sh": hashlib.sha256(b"#!/bin/sh\necho run\n").hexdigest(),
        "data/blob.bin": hashlib.sha256(bytes(range(256))).hexdigest(),
    }
    assert set(lock["skills"]) == {"bundle-skill", "plain-skill"}

    # The registry moves on; a frozen install still gives exactly the locked versions.
    publish(registry, token, "bundle-skill", "# Bundle\nChanged upstream.", files=FILES, base_version=1)
    shutil.rmtree(out / "bundle-skill")
    (out / "plain-skill" / "SKILL.md").write_text("local scribble")
    frozen = skillreg(registry, token, "pull", "--frozen", str(out))
    assert frozen.returncode == 0, frozen.stderr
    assert _tree(out / "bundle-skill") == tree
    assert (out / "plain-skill" / "SKILL.md").read_text().endswith("Nothing else.\n")
    assert json.loads((out / "skills.lock").read_text()) == lock

    every = skillreg(registry, token, "pull", "--all", str(tmp_path / "all"))
    assert every.returncode == 0, every.stderr
    assert sorted(json.loads((tmp_path / "all" / "skills.lock").read_text())["skills"]) == [
        "bundle-skill",
        "plain-skill",
    ]
    assert json.loads((tmp_path / "all" / "skills.lock").read_text())["skills"]["bundle-skill"]["version"] == 2


def test_frozen_fails_naming_the_skill_whose_content_differs_and_writes_nothing(registry, token, tmp_path):
    publish(registry, token, "locked-a", "# A\nFirst.", files=FILES[:1])
    publish(registry, token, "locked-b", "# B\nSecond.")
    out = tmp_path / "skills"
    assert skillreg(registry, token, "pull", "locked-a", "locked-b", str(out)).returncode == 0
    lock_path = out / "skills.lock"
    lock = json.loads(lock_path.read_text())
    # A lock written against other content (another registry, or edited by hand).
    run_sh = next(f for f in lock["skills"]["locked-b"]["files"] if f["path"] == "SKILL.md")
    run_sh["sha256"] = "0" * 64
    lock_path.write_text(json.dumps(lock))
    shutil.rmtree(out / "locked-a")

    failed = skillreg(registry, token, "pull", "--frozen", str(out))

    assert failed.returncode == 1
    assert "locked-b (version 1): the registry's content differs from skills.lock" in failed.stderr
    assert "SKILL.md: sha256" in failed.stderr
    assert not (out / "locked-a").exists()  # checked everything before writing anything

    unknown = skillreg(registry, token, "pull", "--frozen", "not-locked", str(out))
    assert unknown.returncode == 1 and "not-locked: not in" in unknown.stderr


def test_push_publishes_changed_folders_with_the_locks_base_version(registry, token, tmp_path):
    publish(registry, token, "push-a", "# A\nFirst.", files=FILES[:1])
    publish(registry, token, "push-b", "# B\nSecond.")
    out = tmp_path / "skills"
    assert skillreg(registry, token, "pull", "push-a", "push-b", str(out)).returncode == 0
    skill_md = out / "push-a" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "Edited locally.\n")
    (out / "push-a" / "scripts" / "new.py").write_text("print('new')\n")
    (out / "push-a" / "scripts" / "new.py").chmod(0o755)
    new = out / "push-new"
    new.mkdir()
    (new / "SKILL.md").write_text("---\nname: push-new\ndescription: Brand new. Use when testing push.\n---\nNew.\n")

    pushed = skillreg(registry, token, "push", str(out), "-m", "local edits")

    assert pushed.returncode == 0, pushed.stderr
    assert "push-a: published version 2" in pushed.stdout
    assert "push-b: unchanged (version 1)" in pushed.stdout
    assert "push-new: published version 1" in pushed.stdout
    assert (
        read_folder(out / "push-a").fingerprint == Skill.objects.get(name="push-a").versions.get(number=2).fingerprint
    )
    lock = json.loads((out / "skills.lock").read_text())["skills"]
    assert (lock["push-a"]["version"], lock["push-new"]["version"]) == (2, 1)

    # Someone else publishes version 3; a push of an edit of version 2 is refused, not lost.
    publish(registry, token, "push-a", "# A\nTheirs.", base_version=2)
    skill_md.write_text(skill_md.read_text() + "Mine too.\n")
    conflict = skillreg(registry, token, "push", str(out))
    assert conflict.returncode == 1
    assert "push-a: conflict: the registry has version 3, your edit is of version 2" in conflict.stderr
    assert Skill.objects.get(name="push-a").latest_version == 3
    assert json.loads((out / "skills.lock").read_text())["skills"]["push-a"]["version"] == 2

    # Pulling over the unpublished edit would lose it: refused, unless asked for.
    refused = skillreg(registry, token, "pull", "push-a", str(out))
    assert refused.returncode == 1 and "push-a: changed in" in refused.stderr
    assert "Mine too." in skill_md.read_text()
    forced = skillreg(registry, token, "pull", "--force", "push-a", str(out))
    assert forced.returncode == 0, forced.stderr
    assert skill_md.read_text().endswith("Theirs.\n")
    assert json.loads((out / "skills.lock").read_text())["skills"]["push-a"]["version"] == 3


def test_validate_reports_errors_with_their_line(tmp_path, token, registry):
    good = tmp_path / "good"
    good.mkdir()
    (good / "SKILL.md").write_text("---\nname: good\ndescription: >\n  Folded text. Use when it is good.\n---\nx\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: bad\ndescription: ''\n---\nx\n")

    assert skillreg(registry, token, "validate", str(good)).returncode == 0
    checked = skillreg(registry, token, "validate", str(tmp_path))
    assert checked.returncode == 1
    assert f"{bad / 'SKILL.md'}:3: error: `description` is missing or empty." in checked.stdout
    assert "2 skills checked: 1 errors, 0 warnings" in checked.stdout


def test_report_sends_events_in_batches_and_resent_ids_count_once(registry, token):
    publish(registry, token, "usage-skill", "# Usage\nBody.")
    client = Client(registry.url, token, report_interval=60)
    start = registry.mark()
    ids = []
    for run in range(3):
        ids += client.report(
            [
                {"kind": "loaded", "skill": "usage-skill", "trigger": "task_match", "event_id": f"run-{run}:loaded"},
                {"kind": "succeeded", "skill": "usage-skill", "duration_ms": 10 * run},
            ]
        )

    assert client.flush()
    assert registry.requests("/api/v1/usage", since=start, at_least=1) == [
        "POST /api/v1/usage 200"
    ]  # six events, one POST
    assert (client.reporter.accepted, client.reporter.duplicates) == (6, 0)
    assert set(UsageEvent.objects.values_list("event_id", flat=True)) == set(ids)

    # A batch sent again (as after a timeout) carries the same ids: nothing is counted twice.
    client.report([{"kind": "loaded", "skill": "usage-skill", "event_id": "run-0:loaded"}])
    assert client.flush()
    assert (client.reporter.accepted, client.reporter.duplicates) == (6, 1)
    assert UsageEvent.objects.count() == 6
    client.close()


def test_events_still_queued_at_exit_are_sent(registry, token):
    publish(registry, token, "exit-skill", "# Exit\nBody.")
    script = (
        "import sys; from skill_registry_client import Client\n"
        "client = Client(sys.argv[1], sys.argv[2], report_interval=600)\n"
        "client.report([{'kind': 'loaded', 'skill': 'exit-skill', 'event_id': 'at-exit'}])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, registry.url, token], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert UsageEvent.objects.filter(event_id="at-exit").exists()


def test_pull_with_a_label_takes_the_version_it_points_to(registry, token, tmp_path):
    publish(registry, token, "labelled", "# Labelled\nOne.")
    publish(registry, token, "labelled", "# Labelled\nTwo.", base_version=1)
    publish(registry, token, "unlabelled", "# Unlabelled\nOnly latest.")
    Transport(registry.url, token).request("PUT", "skills/labelled/labels/staging", json_body={"version": 1})
    out = tmp_path / "staging"

    done = skillreg(registry, token, "pull", "--all", "--label", "staging", str(out))

    assert done.returncode == 0, done.stderr
    lock = json.loads((out / "skills.lock").read_text())["skills"]
    assert list(lock) == ["labelled"]  # a skill without the label is not pulled
    assert (lock["labelled"]["version"], lock["labelled"]["label"]) == (1, "staging")
    assert (out / "labelled" / "SKILL.md").read_text().endswith("One.\n")
    missing = skillreg(registry, token, "pull", "no-such-skill", str(tmp_path / "none"))
    assert missing.returncode == 1 and "skills/no-such-skill: 404" in missing.stderr
    assert not (tmp_path / "none" / "skills.lock").exists()


def test_options_may_stand_between_the_names_and_the_folder(registry, token, tmp_path):
    publish(registry, token, "mixed-a", "# A\nOne.")
    publish(registry, token, "mixed-a", "# A\nTwo.", base_version=1)
    publish(registry, token, "mixed-b", "# B\nOne.")
    transport = Transport(registry.url, token)
    for name in ("mixed-a", "mixed-b"):
        transport.request("PUT", f"skills/{name}/labels/production", json_body={"version": 1})
    out = tmp_path / "mixed"

    done = skillreg(registry, token, "pull", "mixed-a", "mixed-b", "--label", "production", str(out))

    assert done.returncode == 0, done.stderr
    lock = json.loads((out / "skills.lock").read_text())["skills"]
    assert {name: (entry["version"], entry["label"]) for name, entry in lock.items()} == {
        "mixed-a": (1, "production"),
        "mixed-b": (1, "production"),
    }
    # The documented shape of a frozen install of some of the lock: `pull --frozen [NAME…] DIR`.
    frozen = skillreg(registry, token, "pull", "--frozen", "mixed-a", str(out))
    assert frozen.returncode == 0, frozen.stderr
    interleaved = skillreg(registry, token, "pull", "mixed-a", "--frozen", str(out))
    assert interleaved.returncode == 0, interleaved.stderr
    unknown = skillreg(registry, token, "pull", "mixed-a", "--label", "production", str(out), "--bogus")
    assert unknown.returncode == 2 and "unrecognized arguments: --bogus" in unknown.stderr


def test_validate_of_a_missing_folder_says_so_without_a_traceback(registry, token, tmp_path):
    missing = skillreg(registry, token, "validate", str(tmp_path / "nowhere"))

    assert missing.returncode == 1
    said = f"skillreg: error: {tmp_path / 'nowhere'} does not exist: give a skill folder, or a folder of skill folders."
    assert missing.stderr == said + "\n"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello\n")
    not_a_folder = skillreg(registry, token, "validate", str(a_file))
    assert not_a_folder.returncode == 1 and "is not a folder" in not_a_folder.stderr
    assert "Traceback" not in missing.stderr + not_a_folder.stderr


def _publish_requiring(registry: Registry, token: str, name: str, requires: str, body: str) -> None:
    skill_md = (
        f"---\nname: {name}\ndescription: {name} test skill. Use when testing the client.\n"
        f'metadata:\n  requires: "{requires}"\n---\n{body}\n'
    )
    Transport(registry.url, token).request("POST", "skills", json_body={"skill_md": skill_md})


def test_pull_brings_the_required_skills_locks_them_and_frozen_installs_them_with_the_skill(registry, token, tmp_path):
    publish(registry, token, "dep-fonts", "# Fonts")
    _publish_requiring(registry, token, "dep-pdf", "skill:dep-fonts, tool:Bash", "# PDF")
    _publish_requiring(registry, token, "dep-report", "skill:dep-pdf, skill:dep-absent", "# Report")
    out = tmp_path / "deps"

    done = skillreg(registry, token, "pull", "dep-report", str(out))

    assert done.returncode == 0, done.stderr
    lock = json.loads((out / "skills.lock").read_text())["skills"]
    assert {name: (entry["version"], entry.get("required_by")) for name, entry in lock.items()} == {
        "dep-report": (1, None),
        "dep-pdf": (1, "dep-report"),
        "dep-fonts": (1, "dep-pdf"),
    }
    assert (out / "dep-fonts" / "SKILL.md").read_text().endswith("# Fonts\n")
    assert "dep-fonts: version 1" in done.stdout and "required by dep-pdf" in done.stdout
    assert "dep-absent (required by dep-report) is not served; not pulled" in done.stderr
    shutil.rmtree(out / "dep-fonts")
    frozen = skillreg(registry, token, "pull", "--frozen", "dep-report", str(out))
    assert frozen.returncode == 0, frozen.stderr
    assert (out / "dep-fonts" / "SKILL.md").is_file()
    alone = skillreg(registry, token, "pull", "--no-deps", "dep-report", str(tmp_path / "alone"))
    assert alone.returncode == 0 and list(json.loads((tmp_path / "alone" / "skills.lock").read_text())["skills"]) == [
        "dep-report"
    ]


def test_validate_reads_metadata_requires_an_unknown_skill_warns_and_a_malformed_entry_fails(registry, token, tmp_path):
    publish(registry, token, "val-known", "# Known")
    folder = tmp_path / "val-report"
    folder.mkdir()
    text = "---\nname: val-report\ndescription: Reports. Use when reporting.\nmetadata:\n"
    (folder / "SKILL.md").write_text(
        text + '  requires: "skill:val-known, skill:val-unknown,\n    tool:Bash"\n---\nx\n'
    )

    checked = skillreg(registry, token, "validate", str(folder))

    assert checked.returncode == 0, checked.stdout
    assert f"{folder / 'SKILL.md'}:5: warning: `skill:val-unknown`: the registry has no skill" in checked.stdout
    assert "val-known`" not in checked.stdout
    (folder / "SKILL.md").write_text(text + '  requires: "skill:val-known,\n    toolBash"\n---\nx\n')
    failed = skillreg(registry, token, "validate", str(folder))
    assert failed.returncode == 1
    assert f"{folder / 'SKILL.md'}:6: error: `metadata.requires`: `toolBash` is not" in failed.stdout
