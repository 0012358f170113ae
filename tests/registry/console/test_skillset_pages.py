"""Removing a set label in the console passes each member's label policy, as the API does: an
author is sent back with the refusal naming the member; an admin facing an eval-gated label gets
a page to remove it anyway with a reason, which the set's label history keeps."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from registry.errors import NotFound
from registry.models import Skill, SkillsetLabelHistory
from registry.selectors.skillsets import served_skillset
from registry.services.label_policies import label_policy_set
from registry.services.skillsets import skillset_label_move, skillset_publish
from tests.factories import publish
from tests.registry.console.conftest import user_with_role

pytestmark = pytest.mark.django_db

LABELS_URL = "/skillsets/data/labels/"
GATE = {"model": "scripted", "min_task_rate": 0.8, "min_trigger_f1": 0.8, "not_worse": True}


@pytest.fixture
def data_set():
    """The set `data` ({charts: 1}) with `production` on its v1."""
    publish("charts")
    set_version, _ = skillset_publish(name="data", members={"charts": 1})
    skillset_label_move(skillset=set_version.skillset, label="production", version_number=1)


def _remove(client, **extra):
    return client.post(LABELS_URL, {"action": "delete", "label": "production", **extra})


def test_an_author_is_sent_back_with_the_member_that_refuses(author_client, data_set):
    label_policy_set(label="production", roles=["admin"])

    response = _remove(author_client)

    assert response.status_code == 302
    flashed = [str(message) for message in get_messages(response.wsgi_request)]
    assert any("Member 'charts'" in message for message in flashed), flashed
    assert served_skillset("data", "production").version == 1


def test_an_admin_removes_an_eval_gated_set_label_with_a_reason(client, data_set):
    label_policy_set(label="production", roles=["admin", "author"], require_eval=GATE)
    client.force_login(user_with_role("root", "admin"))

    page = _remove(client)

    assert page.status_code == 409
    assert b"Member &#x27;charts&#x27;" in page.content and b'name="override_reason"' in page.content
    assert served_skillset("data", "production").version == 1

    done = _remove(client, override_reason="Retiring the set")

    assert done.status_code == 302
    with pytest.raises(NotFound):
        served_skillset("data", "production")
    assert SkillsetLabelHistory.objects.get(kind="delete").reason == "Retiring the set"
    assert Skill.objects.get(name="charts").labels.filter(name="production").exists()
