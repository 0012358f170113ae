"""Weighted sticky rollouts of a label: `PUT .../labels/{label}` with `weight` keeps the label on
its stable version and sends that share of subjects to the canary; every read path serves a
subject the same version and says which; `DELETE .../rollout` aborts, a `PUT` without weight
promotes."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.test import Client
from rest_framework.test import APIClient

from agents.turns.store import RegistrySkillStore
from registry.models import AuditLog, Label, LabelHistory
from registry.readmodel.generation import current_generation
from registry.readmodel.rollouts import subject_pins
from registry.readmodel.served import skill_served
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_move
from tests.factories import publish

pytestmark = pytest.mark.django_db

LABEL_URL = "/api/v1/skills/canaried/labels/production"


@pytest.fixture
def canaried():
    """`canaried` v1 (production, stable) and v2 (the canary to be), with a file each."""
    publish("canaried", description="Stable edition.", files=[("notes.txt", b"stable notes\n", False)])
    skill = publish("canaried", description="Canary edition.", files=[("notes.txt", b"canary notes\n", False)]).skill
    label_move(skill=skill, label="production", version_number=1)
    return skill


def _canary_share(subjects) -> tuple[set[str], float]:
    """Who gets the canary, by the read model's one decision (at one generation, so the 10,000
    answers cost no query each)."""
    generation = current_generation()
    on_canary = {s for s in subjects if subject_pins(label=None, subject=s, generation=generation).get("canaried") == 2}
    return on_canary, 100 * len(on_canary) / len(subjects)


def test_starting_a_rollout_keeps_the_label_on_stable_and_reports_the_split(api, canaried):
    response = api.put(LABEL_URL, {"version": 2, "weight": 10}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == 1 and body["canary_version"] == 2 and body["weight"] == 10
    assert body["rollout_started_at"] and body["rolled_back_at"] is None
    label = Label.objects.get(skill=canaried, name="production")
    assert label.version.number == 1 and label.rollout_active
    assert AuditLog.objects.filter(action="label.rollout").count() == 1
    listed = api.get("/api/v1/skills/canaried/labels").json()["labels"]
    assert listed[0]["canary_version"] == 2 and listed[0]["weight"] == 10
    # Without a subject, every read keeps to the stable version.
    assert skill_served(name="canaried").version == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"version": 2, "weight": 101}, "weight"),
        ({"version": 2, "weight": -1}, "weight"),
        ({"version": 2, "weight": "ten"}, "weight"),
        ({"version": 2, "weight": 10.5}, "weight"),
        ({"weight": 10}, "version"),
    ],
)
def test_bad_rollout_input_is_a_400_naming_the_field(api, canaried, body, field):
    response = api.put(LABEL_URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert not Label.objects.get(skill=canaried, name="production").rollout_active


def test_a_canary_equal_to_stable_or_on_a_missing_label_is_refused(api, canaried):
    same = api.put(LABEL_URL, {"version": 1, "weight": 10}, format="json")
    assert same.status_code == 409 and "version" in same.json()["fields"]
    missing = api.put("/api/v1/skills/canaried/labels/staging", {"version": 2, "weight": 10}, format="json")
    assert missing.status_code == 409 and "label" in missing.json()["fields"]
    unknown = api.put(LABEL_URL, {"version": 9, "weight": 10}, format="json")
    assert unknown.status_code == 404


def test_stickiness_share_repeats_and_raises(api, canaried):
    """10,000 subjects: the canary share is within 1.5 points of the weight, each subject gets
    the same version on 20 reads, and raising the weight only moves subjects stable → canary."""
    subjects = [f"user-{n}" for n in range(10_000)]
    api.put(LABEL_URL, {"version": 2, "weight": 10}, format="json")

    at_ten, share = _canary_share(subjects)
    assert abs(share - 10) <= 1.5, share
    sample = subjects[:300]
    for _ in range(20):
        assert {s for s in sample if skill_served(name="canaried", subject=s).version == 2} == at_ten & set(sample)

    assert api.put(LABEL_URL, {"version": 2, "weight": 30}, format="json").status_code == 200
    at_thirty, share = _canary_share(subjects)
    assert abs(share - 30) <= 1.5, share
    assert at_ten <= at_thirty  # nobody went back to stable

    assert api.put(LABEL_URL, {"version": 2, "weight": 20}, format="json").status_code == 200
    at_twenty, _ = _canary_share(subjects)
    assert at_ten <= at_twenty <= at_thirty  # lowering only moves canary → stable
    steps = LabelHistory.objects.filter(skill=canaried).order_by("id").values_list("kind", "weight")
    assert list(steps) == [("move", None), ("rollout_start", 10), ("rollout_step", 30), ("rollout_step", 20)]


def _zipped(content: bytes, path: str) -> bytes:
    archive = zipfile.ZipFile(io.BytesIO(content))
    return archive.read(next(name for name in archive.namelist() if name.endswith(path)))


def _reads(api, subject: str, settings) -> dict[str, int]:
    """The version each read path serves `subject`."""
    seen: dict[str, int] = {}
    resolved = api.post("/api/v1/resolve", {"query": "edition", "context": {"subject": subject}}, format="json")
    skill = next(s for s in resolved.json()["skills"] if s["name"] == "canaried")
    seen["resolve"] = skill["version"]
    assert skill["canary"] == (skill["version"] == 2)
    fast = api.get(f"/api/v1/skills/canaried/SKILL.md?subject={subject}")  # the bearer fast path
    seen["skill_md"] = int(fast["X-Skill-Version"])
    assert ("Canary edition" in fast.content.decode()) == (seen["skill_md"] == 2)
    slow = api.get(f"/api/v1/skills/canaried/SKILL.md?subject={subject}&source=user")  # the DRF path
    seen["skill_md_source"] = int(slow["X-Skill-Version"])
    detail = api.get(f"/api/v1/skills/canaried?subject={subject}")
    seen["detail"] = detail.json()["version"]
    assert int(detail["X-Skill-Version"]) == seen["detail"]
    file = api.get(f"/api/v1/skills/canaried/files/notes.txt?subject={subject}")
    seen["file"] = int(file["X-Skill-Version"])
    assert (file.content == b"canary notes\n") == (seen["file"] == 2)
    bundle = api.get(f"/api/v1/skills/canaried/bundle.zip?subject={subject}")
    seen["bundle"] = int(bundle["X-Skill-Version"])
    assert (_zipped(bundle.content, "notes.txt") == b"canary notes\n") == (
        seen["bundle"] == 2
    )
    store = RegistrySkillStore(pins=subject_pins(label=None, subject=subject))
    seen["runtime_store"] = store.load("canaried").version
    assert [s.version for s, _ in store.match("edition") if s.name == "canaried"] == [seen["runtime_store"]]
    settings.DISCOVERY_LABEL = "production"
    index = json.loads(Client().get(f"/.well-known/agent-skills/index.json?subject={subject}").content)
    seen["discovery"] = int(next(e["version"] for e in index["skills"] if e["name"] == "canaried"))
    artifact = Client().get(f"/.well-known/agent-skills/canaried.zip?subject={subject}")
    seen["discovery_artifact"] = int(artifact["X-Skill-Version"])
    return seen


def test_every_read_path_agrees_on_a_subjects_version_and_says_which(api, canaried, settings):
    api.put(LABEL_URL, {"version": 2, "weight": 50}, format="json")
    sides = set()
    for n in range(24):
        subject = f"agent-{n}"
        expected = skill_served(name="canaried", subject=subject).version
        seen = _reads(api, subject, settings)
        assert set(seen.values()) == {expected}, (subject, seen)
        sides.add(expected)
    assert sides == {1, 2}  # both sides were exercised


def test_etags_stay_per_version(api, canaried):
    api.put(LABEL_URL, {"version": 2, "weight": 50}, format="json")
    by_version: dict[int, set[str]] = {1: set(), 2: set()}
    for n in range(30):
        response = api.get(f"/api/v1/skills/canaried/SKILL.md?subject=s{n}")
        by_version[int(response["X-Skill-Version"])].add(response["ETag"])
        again = api.get(f"/api/v1/skills/canaried/SKILL.md?subject=s{n}", HTTP_IF_NONE_MATCH=response["ETag"])
        assert again.status_code == 304 and again["X-Skill-Version"] == response["X-Skill-Version"]
    assert len(by_version[1]) == 1 and len(by_version[2]) == 1 and by_version[1] != by_version[2]


def test_abort_sends_everyone_back_to_stable(api, canaried):
    api.put(LABEL_URL, {"version": 2, "weight": 100}, format="json")
    assert skill_served(name="canaried", subject="anyone").version == 2

    response = api.delete(f"{LABEL_URL}/rollout")

    assert response.status_code == 200 and response.json()["canary_version"] is None
    assert response.json()["weight"] == 0
    assert skill_served(name="canaried", subject="anyone").version == 1
    assert AuditLog.objects.filter(action="label.rollout_abort").count() == 1
    assert api.delete(f"{LABEL_URL}/rollout").status_code == 404
    assert LabelHistory.objects.filter(kind="abort").values_list("from_version", "to_version").get() == (1, 2)


def test_a_put_without_weight_promotes_and_ends_the_rollout(api, canaried):
    api.put(LABEL_URL, {"version": 2, "weight": 10}, format="json")

    response = api.put(LABEL_URL, {"version": 2}, format="json")

    assert response.status_code == 200
    assert response.json()["version"] == 2 and response.json()["canary_version"] is None
    assert not Label.objects.get(skill=canaried, name="production").rollout_active
    assert {skill_served(name="canaried", subject=f"s{n}").version for n in range(50)} == {2}
    assert LabelHistory.objects.order_by("-id").values_list("kind", flat=True).first() == "promote"


def test_a_turns_conversation_is_its_subject(canaried, api):
    """The runtime reads with the conversation as subject: the pins its store gets."""
    api.put(LABEL_URL, {"version": 2, "weight": 50}, format="json")
    for n in range(20):
        pins = subject_pins(label=None, subject=f"conversation:{n}")
        assert pins.get("canaried", 1) == skill_served(name="canaried", subject=f"conversation:{n}").version


def test_a_label_policy_gates_starting_and_raising_but_not_lowering(make_token, canaried):
    """roles: only admins may start or raise; an author may still lower the weight or abort
    (less traffic to an unproven version needs no permission); with require_eval a canary
    without an eval run is a 409 listing the unmet check."""
    admin, author = APIClient(), APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:write', 'skills:read', 'policies:write'])}")
    author.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(['skills:write', 'skills:read'])}")
    label_policy_set(label="production", roles=["admin"])

    refused = author.put(LABEL_URL, {"version": 2, "weight": 10}, format="json")
    assert refused.status_code == 403 and refused.json()["policy"] == "production"
    assert admin.put(LABEL_URL, {"version": 2, "weight": 20}, format="json").status_code == 200
    assert author.put(LABEL_URL, {"version": 2, "weight": 30}, format="json").status_code == 403
    assert author.put(LABEL_URL, {"version": 2, "weight": 5}, format="json").status_code == 200
    assert Label.objects.get(skill=canaried, name="production").weight == 5
    assert author.delete(f"{LABEL_URL}/rollout").status_code == 200

    label_policy_set(
        label="production",
        roles=["admin"],
        require_eval={"model": "offline", "min_task_rate": 0.8, "min_trigger_f1": None, "not_worse": False},
    )
    unmet = admin.put(LABEL_URL, {"version": 2, "weight": 10}, format="json")
    assert unmet.status_code == 409 and unmet.json()["unmet"][0]["check"] == "eval_run"
    assert not Label.objects.get(skill=canaried, name="production").rollout_active
