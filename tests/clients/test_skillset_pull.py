"""`skillreg pull --skillset SET [--label L] DIR` against the registry served by gunicorn: exactly
the set's members, at the numbers of its version at the label (never the members' own labels),
each locked with the set it came from, so `--frozen` installs them again; refusals name the set,
the label or the option that cannot go with it."""

from __future__ import annotations

import json

import pytest

from registry.models import Skill, TokenScope
from registry.services.labels import label_move
from tests.clients.test_python_client import publish, registry, skillreg
from tests.registry.skillset_fixtures import set_label, set_version

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["registry"]  # the gunicorn fixture, shared with the client's own tests

V1 = {"sheets": 1, "charts": 2}
V2 = {"sheets": 2, "charts": 3}


@pytest.fixture
def token(make_token):
    return make_token([TokenScope.SKILLS_READ, TokenScope.SKILLS_WRITE])


@pytest.fixture
def data_set(registry, token):
    for name, count in (("sheets", 2), ("charts", 3)):
        for number in range(1, count + 1):
            publish(registry, token, name, f"# {name}\nEdition {number}.", base_version=number - 1 or None)
    publish(registry, token, "outsider", "# Outsider\nNot in the set.")
    set_version("data", V1)
    set_version("data", V2)
    set_label("data", "production", 1)
    label_move(skill=Skill.objects.get(name="sheets"), label="production", version_number=2)  # alone


def _lock(folder) -> dict:
    return json.loads((folder / "skills.lock").read_text())["skills"]


def test_pull_a_skillset_locks_exactly_its_members_at_the_sets_numbers(registry, token, data_set, tmp_path):
    out = tmp_path / "data"

    done = skillreg(registry, token, "pull", "--skillset", "data", str(out))

    assert done.returncode == 0, done.stderr
    lock = _lock(out)
    assert {name: entry["version"] for name, entry in lock.items()} == V1  # sheets' own production is 2
    assert {json.dumps(entry["skillset"], sort_keys=True) for entry in lock.values()} == {
        json.dumps({"label": "production", "name": "data", "version": 1}, sort_keys=True)
    }
    assert (out / "sheets" / "SKILL.md").read_text().endswith("Edition 1.\n")
    assert (out / "charts" / "SKILL.md").read_text().endswith("Edition 2.\n")
    assert not (out / "outsider").exists()
    assert "skillset data: version 1 at production" in done.stdout

    # --frozen installs the lock again, whatever the set's label says now.
    set_label("data", "production", 2)
    (out / "charts" / "SKILL.md").write_text("scribbled")
    frozen = skillreg(registry, token, "pull", "--frozen", str(out))
    assert frozen.returncode == 0, frozen.stderr
    assert (out / "charts" / "SKILL.md").read_text().endswith("Edition 2.\n")

    # A new pull follows the set's label (every member at once); --label reads another label.
    again = skillreg(registry, token, "pull", "--skillset", "data", "--force", str(out))
    assert again.returncode == 0, again.stderr
    assert {name: entry["version"] for name, entry in _lock(out).items()} == V2
    latest = skillreg(registry, token, "pull", "--skillset", "data", "--label", "latest", str(tmp_path / "latest"))
    assert latest.returncode == 0, latest.stderr
    assert {name: entry["version"] for name, entry in _lock(tmp_path / "latest").items()} == V2


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--skillset", "nope"), "nope"),
        (("--skillset", "data", "--label", "staging"), "staging"),
        (("--skillset", "data", "sheets"), "no skill names"),
        (("--skillset", "data", "--all"), "no --all"),
        (("--skillset", "data", "--frozen"), "no --frozen"),
    ],
)
def test_pull_refuses_a_bad_skillset_request_naming_it_and_writes_nothing(
    registry, token, data_set, tmp_path, args, named
):
    out = tmp_path / "refused"

    done = skillreg(registry, token, "pull", *args, str(out))

    assert done.returncode == 1
    assert named in done.stderr and "Traceback" not in done.stderr
    assert not (out / "skills.lock").exists()
