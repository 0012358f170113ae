"""The client on its own: bundles, fingerprints, the lockfile and validation without a network,
and the cache and usage reporter against a small stand-in registry (http.server on a free port)
that answers with ETags, 304s and, when told to, 503s. tests/clients/ runs it against the real one."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import time
import zipfile

import pytest
from stand_in import StandInHandler, serving, url_of

from skill_registry_client import Client, NotFound, RegistryError, RegistryUnavailable
from skill_registry_client.cache import Entry, ResponseCache
from skill_registry_client.folders import (
    SkillBundle,
    SkillFile,
    bundle_from_folder,
    bundle_from_zip,
    lock_differences,
    validate_folder,
    write_folder,
)

SKILL = b"---\nname: demo\ndescription: Demo. Use when testing.\n---\nBody\n"


def registry_zip(entries: list[tuple[str, bytes, int]], prefix: str = "demo/") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, content, mode in entries:
            info = zipfile.ZipInfo(prefix + path)
            info.create_system = 3
            info.external_attr = mode << 16
            archive.writestr(info, content)
    return buffer.getvalue()


def test_a_zip_with_links_and_modes_round_trips_through_a_folder(tmp_path):
    data = registry_zip(
        [
            ("SKILL.md", SKILL, stat.S_IFREG | 0o644),
            ("AGENTS.md", b"docs/a.md", stat.S_IFLNK | 0o777),
            ("docs/a.md", b"# A\r\n", stat.S_IFREG | 0o644),
            ("run.sh", b"#!/bin/sh\n", stat.S_IFREG | 0o755),
        ]
    )
    bundle = bundle_from_zip("demo", data)
    assert [f.path for f in bundle.files] == ["SKILL.md", "AGENTS.md", "docs/a.md", "run.sh"]
    link = bundle.files[1]
    assert (link.link, link.content) == ("docs/a.md", b"# A\r\n")

    write_folder(bundle, tmp_path / "demo")
    assert (tmp_path / "demo" / "AGENTS.md").readlink().as_posix() == "docs/a.md"
    assert (tmp_path / "demo" / "run.sh").stat().st_mode & 0o777 == 0o755
    again = bundle_from_folder(tmp_path / "demo")
    assert again.files == bundle.files and again.fingerprint == bundle.fingerprint


def test_the_fingerprint_is_the_registrys():
    files = (SkillFile("SKILL.md", SKILL), SkillFile("b.txt", b"b"), SkillFile("l.md", b"b", link="b.txt"))
    lines = [f"SKILL.md:{hashlib.sha256(SKILL).hexdigest()}", f"b.txt:{hashlib.sha256(b'b').hexdigest()}"]
    lines.append("l.md\tb.txt")  # a link: its target text, not its bytes
    expected = hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
    assert SkillBundle(name="demo", files=files).fingerprint == expected


@pytest.mark.parametrize(
    "entries",
    [
        [("SKILL.md", SKILL, 0o100644), ("../evil", b"x", 0o100644)],
        [("SKILL.md", SKILL, 0o100644), ("link", b"../../etc/passwd", 0o120777)],
        [("SKILL.md", SKILL, 0o100644), ("link", b"/etc/passwd", 0o120777)],
        [("SKILL.md", SKILL, 0o100644), ("a", b"b", 0o120777), ("b", b"a", 0o120777)],
    ],
    ids=["dotdot-path", "link-out", "absolute-link", "loop"],
)
def test_a_zip_that_would_write_outside_the_skill_is_refused(entries):
    with pytest.raises(RegistryError):
        bundle_from_zip("demo", registry_zip(entries, prefix=""))


def test_lock_differences_name_the_file_that_changed():
    bundle = SkillBundle(name="demo", files=(SkillFile("SKILL.md", SKILL), SkillFile("x.py", b"1")), version=1)
    locked = bundle.lock_entry()
    assert lock_differences("demo", locked, bundle) == []
    changed = SkillBundle(name="demo", files=(SkillFile("SKILL.md", SKILL), SkillFile("x.py", b"2")), version=1)
    assert lock_differences("demo", locked, changed) == [
        f"x.py: sha256 {hashlib.sha256(b'2').hexdigest()}, skills.lock has {hashlib.sha256(b'1').hexdigest()}"
    ]


def test_validate_finds_what_the_registry_would_refuse(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: demo\ndescription: |\n  Block text.\n---\n")
    assert validate_folder(folder) == []
    (folder / "SKILL.md").write_text("---\nname: Other_Name\n---\nbody\n")
    assert [(i.line, i.level, i.message.split(" ")[0]) for i in validate_folder(folder)] == [
        (3, "error", "`description`"),
        (2, "warning", "name"),
        (2, "warning", "name"),
    ]
    (folder / "SKILL.md").write_text("# no frontmatter\n")
    assert [i.level for i in validate_folder(folder)] == ["error"]
    (folder / "SKILL.md").write_bytes(b"---\nname: d\n\xff\n")
    assert [(i.line, i.message) for i in validate_folder(folder)] == [(3, "not valid UTF-8.")]


class StandIn(StandInHandler):
    """POST /api/v1/resolve with an ETag over the answer; POST /api/v1/usage counting event ids."""

    answer = {"skills": [], "prompt_block": "", "instructions": [], "fired_rules": []}
    unavailable = 0  # answer this many requests with 503 first
    gone = False  # answer 404
    log: list[tuple[str, int]] = []
    event_ids: list[str] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        if cls.unavailable:
            cls.unavailable -= 1
            return self._send(503, b'{"error": "unavailable", "detail": "try later"}')
        if cls.gone:
            return self._send(404, b'{"error": "not_found", "detail": "gone"}')
        if self.path == "/api/v1/usage":
            fresh = [e["event_id"] for e in body["events"] if e["event_id"] not in cls.event_ids]
            cls.event_ids += fresh
            payload = {"accepted": len(fresh), "duplicates": len(body["events"]) - len(fresh)}
            return self._send(200, json.dumps(payload).encode())
        content = json.dumps({**cls.answer, "query": body["query"]}).encode()
        etag = f'"{hashlib.sha256(content).hexdigest()}"'
        if self.headers.get("If-None-Match") == etag:
            return self._send(304, b"", etag)
        self._send(200, content, etag)

    def _send(self, status: int, content: bytes, etag: str | None = None) -> None:
        type(self).log.append((self.path, status))
        self.send(status, content, {"ETag": etag} if etag else {})


@pytest.fixture
def stand_in():
    StandIn.log, StandIn.event_ids, StandIn.unavailable, StandIn.gone = [], [], 0, False
    with serving(StandIn) as server:
        yield server, url_of(server)


def test_the_cache_revalidates_serves_stale_and_refuses_a_first_call_it_cannot_answer(stand_in, tmp_path):
    server, url = stand_in
    client = Client(url, "t", cache_dir=str(tmp_path), ttl=0, stale_while_revalidate=0)
    first = client.resolve("hello")
    assert client.resolve("hello") == first
    assert StandIn.log == [("/api/v1/resolve", 200), ("/api/v1/resolve", 304)]

    StandIn.unavailable = 1  # a 503 counts as unreachable: the last good answer is better
    assert client.resolve("hello").stale
    assert not client.resolve("hello").stale  # reachable again: confirmed with a 304

    server.shutdown()
    server.server_close()
    assert client.resolve("hello").stale
    with pytest.raises(RegistryUnavailable, match="Nothing is cached"):
        client.resolve("another question")
    assert Client(url, "t", cache_dir=str(tmp_path)).resolve("hello").raw == first.raw  # from disk
    with pytest.raises(RegistryUnavailable):  # another token may read other things: nothing is shared
        Client(url, "other token", cache_dir=str(tmp_path)).resolve("hello")


def test_stale_while_revalidate_answers_at_once_and_refreshes_behind(stand_in):
    _, url = stand_in
    client = Client(url, "t", ttl=0, stale_while_revalidate=60)
    client.resolve("q")
    client.resolve("q")
    deadline = time.monotonic() + 5
    while len(StandIn.log) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert StandIn.log == [("/api/v1/resolve", 200), ("/api/v1/resolve", 304)]
    assert client.stats.background == 1


def test_an_answer_the_registry_refuses_in_the_background_is_dropped(stand_in):
    _, url = stand_in
    client = Client(url, "t", ttl=0, stale_while_revalidate=60)
    first = client.resolve("q")
    key = '["POST","resolve",null,{"context":{},"label":null,"query":"q"}]'
    assert client.cache.get(key) is not None
    StandIn.gone = True
    assert client.resolve("q") == first  # served while the revalidation runs
    deadline = time.monotonic() + 5
    while client.cache.get(key) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(NotFound, match="gone"):
        client.resolve("q")


def test_reports_are_retried_with_their_ids_after_the_registry_fails(stand_in):
    _, url = stand_in
    StandIn.unavailable = 1
    client = Client(url, "t", report_interval=0.05)
    ids = client.report([{"kind": "loaded", "skill": "demo"}, {"kind": "succeeded", "skill": "demo"}])
    assert client.flush(timeout=10)
    assert StandIn.log == [("/api/v1/usage", 503), ("/api/v1/usage", 200)]
    assert StandIn.event_ids == ids and len(set(ids)) == 2
    with pytest.raises(ValueError, match="kind"):
        client.report([{"kind": "used", "skill": "demo"}])
    client.close()


def test_the_disk_cache_keeps_the_newest_answers(tmp_path):
    cache = ResponseCache(tmp_path, scope="s", max_disk_entries=100)
    for number in range(300):
        cache.put(Entry(key=f"k{number}", etag='"e"', body=b"{}", checked_at=float(number)))
    kept = len(list(tmp_path.iterdir()))
    assert 90 <= kept <= 100 + 128
    assert ResponseCache(tmp_path, scope="s").get("k299") is not None
    assert ResponseCache(tmp_path, scope="s").get("k0") is None


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".", "", "a\\b", "a\0b"])
def test_a_skill_name_that_is_not_one_folder_name_never_reaches_the_file_system(tmp_path, name):
    from skill_registry_client.cli import skill_folder

    with pytest.raises(RegistryError, match="not a skill name"):
        skill_folder(tmp_path, name)
    assert skill_folder(tmp_path, "pdf-tools") == tmp_path / "pdf-tools"
