"""A skillset's label moved back and forth while readers resolve it: every answer is exactly one
set version's members at that version's numbers, never a mix.

The readers are HTTP clients of gunicorn (three worker processes, each with its own read-model
caches and its own LISTEN connection) on the test database; the writer moves the set's
`production` label (and, in the same transaction, every member's) between two versions whose
members all differ, through the skillset service. PostgreSQL only: SQLite serialises every writer
and reader on one file lock, which would show nothing."""

from __future__ import annotations

import json
import os
import threading
import urllib.request

import pytest
from django.db import connection

from bench._services import Gunicorn
from registry.models import Skillset, TokenScope
from registry.services.skillsets import skillset_label_move
from tests.registry.skillset_fixtures import publish_versions, set_label, set_version
from tests.worker import _database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True)

MEMBERS = ("sheets", "charts", "pivots", "queries", "exports")
V1 = {name: 1 for name in MEMBERS}
V2 = {name: 2 for name in MEMBERS}
READERS, MOVES = 4, 12


@pytest.fixture
def registry(db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...)")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "DATABASE_URL": _database_url_for_tests(),
        "API_THROTTLE_RATE": "off",
    }
    server = Gunicorn(env=env, workers=3).start()
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


def _resolve(url: str, token: str) -> dict:
    body = json.dumps({"query": "data work", "skillset": "data", "label": "production"}).encode()
    request = urllib.request.Request(
        f"{url}/api/v1/resolve",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _which_version(answer: dict) -> int | None:
    """The set version an answer is exactly, or None for a mix (or anything else)."""
    served = {skill["name"]: skill["version"] for skill in answer["skills"]}
    said = answer["skillset"]
    for number, members in ((1, V1), (2, V2)):
        if served == members and said["members"] == members and said["version"] == number:
            return number
    return None


def test_readers_never_see_a_mix_while_the_sets_label_moves_back_and_forth(registry, make_token):
    for name in MEMBERS:
        publish_versions(name, 2)
    set_version("data", V1)
    set_version("data", V2)
    set_label("data", "production", 1)
    token = make_token([TokenScope.SKILLS_READ])
    assert _which_version({"skills": [{"name": "sheets", "version": 1}], "skillset": {}}) is None  # a mix is caught

    seen: dict[int, int] = {1: 0, 2: 0}
    mixes: list[dict] = []
    errors: list[BaseException] = []
    changed = threading.Condition()
    done = threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                answer = _resolve(registry, token)
                number = _which_version(answer)
                with changed:
                    if number is None:
                        mixes.append(answer)
                    else:
                        seen[number] += 1
                    changed.notify_all()
        except BaseException as error:  # re-raised by the test
            errors.append(error)

    threads = [threading.Thread(target=reader) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    skillset = Skillset.objects.get(name="data")
    try:
        for move in range(MOVES):
            target = 2 if move % 2 == 0 else 1
            with changed:
                before = seen[target]
            skillset_label_move(skillset=skillset, label="production", version_number=target)
            # Each move is read at least once before the next: both sides are really exercised.
            with changed:
                assert changed.wait_for(
                    lambda target=target, before=before: seen[target] > before or errors or mixes, timeout=30
                )
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=60)

    assert errors == []
    assert mixes == []
    assert seen[1] >= MOVES // 2 and seen[2] >= MOVES // 2
    print(f"{sum(seen.values())} reads over {MOVES} moves: {seen[1]} at v1, {seen[2]} at v2, 0 mixed")
