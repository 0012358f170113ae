"""Label services: atomic moves with history, `latest` implicit, rollback by moving back."""

from __future__ import annotations

import pytest

from registry.errors import ApplicationError, NotFound
from registry.models import AuditLog, Label, LabelHistory, RegistryState
from registry.services.audit import Actor
from registry.services.labels import label_delete, label_move
from tests.factories import UserFactory, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def skill():
    publish("labelled", description="One.")
    publish("labelled", description="Two.")
    return publish("labelled", description="Three.").skill


def test_a_move_records_who_from_and_to(skill):
    alice = UserFactory(username="alice")
    label_move(skill=skill, label="production", version_number=2, actor=Actor(user=alice, via="console"))
    label_move(skill=skill, label="production", version_number=3, actor=Actor(user=alice, via="console"))

    history = list(LabelHistory.objects.values_list("label", "from_version", "to_version", "changed_by__username"))
    assert history == [("production", 2, 3, "alice"), ("production", None, 2, "alice")]
    assert AuditLog.objects.filter(action="label.move").count() == 2


def test_rollback_is_moving_the_label_back(skill):
    label_move(skill=skill, label="production", version_number=3)
    label_move(skill=skill, label="production", version_number=2)
    assert Label.objects.get(skill=skill, name="production").version.number == 2


def test_moving_to_the_same_version_writes_nothing(skill):
    label_move(skill=skill, label="staging", version_number=1)
    generation = RegistryState.objects.get().generation
    label_move(skill=skill, label="staging", version_number=1)
    assert LabelHistory.objects.count() == 1
    assert RegistryState.objects.get().generation == generation


@pytest.mark.parametrize("name", ["latest", "Production", "has space", "", "x" * 37, "ünïcode", "a/b"])
def test_invalid_label_names_are_refused(skill, name):
    with pytest.raises(ApplicationError) as caught:
        label_move(skill=skill, label=name, version_number=1)
    assert caught.value.fields == {"label": caught.value.fields["label"]}
    assert not Label.objects.exists() and not LabelHistory.objects.exists()


@pytest.mark.parametrize("name", ["production", "staging", "v1.2_rc-3", "a" * 36])
def test_valid_label_names(skill, name):
    assert label_move(skill=skill, label=name, version_number=1).name == name


def test_a_missing_version_is_not_found_and_nothing_is_written(skill):
    with pytest.raises(NotFound):
        label_move(skill=skill, label="production", version_number=9)
    assert not Label.objects.exists() and not LabelHistory.objects.exists()


def test_delete_records_history_and_missing_labels_are_not_found(skill):
    label_move(skill=skill, label="staging", version_number=1)
    label_delete(skill=skill, label="staging")
    assert not Label.objects.exists()
    assert LabelHistory.objects.first().to_version is None
    with pytest.raises(NotFound):
        label_delete(skill=skill, label="staging")
    with pytest.raises(ApplicationError):
        label_delete(skill=skill, label="latest")
