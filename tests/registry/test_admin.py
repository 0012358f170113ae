"""The Django admin is no write path around the services: the registry's and the
runtime's records are read-only there; what it still writes goes through a service and is audited."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from agents.models import AgentTurn, TurnStatus
from registry.models import ApiToken, AuditLog, Label, LabelHistory, Skill, SkillVersion
from registry.roles import ANALYST, AUTHOR
from registry.services.labels import label_move
from registry.services.rules import rule_create
from registry.services.tokens import api_token_create
from tests.factories import UserFactory, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def skill():
    publish("guarded", description="One.")
    result = publish("guarded", description="Two.")
    label_move(skill=result.skill, label="production", version_number=1)
    return result.skill


def _records(skill):
    """One object of every read-only model, as (admin url name, primary key)."""
    rule = rule_create(name="r", pattern="deploy", skills=["guarded"]).rule
    turn = AgentTurn.objects.create(user=UserFactory(), message="hi", model="offline", status=TurnStatus.RUNNING)
    return [
        ("registry_skillversion", skill.versions.get(number=2).pk),
        ("registry_label", Label.objects.get(skill=skill).pk),
        ("registry_labelhistory", LabelHistory.objects.filter(skill=skill).first().pk),
        ("registry_auditlog", AuditLog.objects.first().pk),
        ("registry_forceincluderule", rule.pk),
        ("agents_agentturn", turn.pk),
    ]


def test_read_only_models_offer_no_add_change_or_delete(admin_client, skill):
    for name, pk in _records(skill):
        assert admin_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
        assert admin_client.get(reverse(f"admin:{name}_add")).status_code == 403, name
        assert admin_client.get(reverse(f"admin:{name}_delete", args=[pk])).status_code == 403, name
        page = admin_client.get(reverse(f"admin:{name}_change", args=[pk]))
        assert page.status_code == 200 and b'name="_save"' not in page.content, name
        assert b"<title>" in page.content and b"| View " in page.content, name


def test_the_issue_s_add_skill_version_post_stores_nothing(admin_client, skill):
    response = admin_client.post(
        reverse("admin:registry_skillversion_add"),
        {"skill": skill.pk, "number": 3, "name": "guarded", "skill_md": "not a skill", "fingerprint": "f" * 64},
    )
    assert response.status_code == 403
    assert SkillVersion.objects.filter(skill=skill).count() == 2
    skill.refresh_from_db()
    assert skill.latest_version == 2


def test_a_label_cannot_be_moved_or_deleted_in_the_admin(admin_client, skill):
    label = Label.objects.get(skill=skill)
    url = reverse("admin:registry_label_change", args=[label.pk])
    assert admin_client.post(url, {"skill": skill.pk, "name": "production", "version": 2}).status_code == 403
    assert (
        admin_client.post(reverse("admin:registry_label_delete", args=[label.pk]), {"post": "yes"}).status_code == 403
    )
    label.refresh_from_db()
    assert label.version.number == 1


def test_bulk_delete_is_not_offered_on_read_only_lists(admin_client, skill):
    for name, _ in _records(skill):
        page = admin_client.get(reverse(f"admin:{name}_changelist"))
        assert b"delete_selected" not in page.content, name


def test_a_turn_cannot_be_edited_or_deleted(admin_client, skill):
    turn = AgentTurn.objects.create(user=UserFactory(), message="hi", model="offline", status=TurnStatus.RUNNING)
    response = admin_client.post(
        reverse("admin:agents_agentturn_change", args=[turn.pk]), {"status": "succeeded", "answer": "forged"}
    )
    assert response.status_code == 403
    turn.refresh_from_db()
    assert turn.status == TurnStatus.RUNNING and turn.answer == ""


def test_disabling_a_skill_in_the_admin_goes_through_the_service_and_is_audited(admin_client, skill):
    url = reverse("admin:registry_skill_change", args=[skill.pk])
    response = admin_client.post(url, {"enabled": ""})
    assert response.status_code == 302, response.content[:2000]
    skill.refresh_from_db()
    assert skill.enabled is False
    entry = AuditLog.objects.get(action="skill.disable")
    assert entry.via == "django admin" and entry.actor.username == "root"


def test_a_skill_cannot_be_added_or_renamed_in_the_admin(admin_client, skill):
    assert admin_client.get(reverse("admin:registry_skill_add")).status_code == 403
    url = reverse("admin:registry_skill_change", args=[skill.pk])
    admin_client.post(url, {"name": "renamed", "source": "bundled", "latest_version": 9, "enabled": "on"})
    skill.refresh_from_db()
    assert (skill.name, skill.source, skill.latest_version) == ("guarded", "user", 2)


def test_tokens_are_revoked_through_the_service_and_cannot_be_added(admin_client):
    owner = UserFactory(is_superuser=True)
    token, _ = api_token_create(name="ci", username=owner.username, scopes=["skills:read"])
    assert admin_client.get(reverse("admin:registry_apitoken_add")).status_code == 403
    response = admin_client.post(
        reverse("admin:registry_apitoken_changelist"), {"action": "revoke", "_selected_action": [token.pk]}
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditLog.objects.get(action="token.revoke").via == "django admin"
    assert ApiToken.objects.count() == 1


def test_giving_a_user_a_role_in_the_admin_is_audited(admin_client):
    author, _ = Group.objects.get_or_create(name=AUTHOR)
    Group.objects.get_or_create(name=ANALYST)
    user = UserFactory(username="bob")
    url = reverse("admin:auth_user_change", args=[user.pk])
    response = admin_client.post(
        url,
        {
            "username": "bob",
            "is_active": "on",
            "groups": [author.pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.content[:3000]
    entry = AuditLog.objects.get(action="user.update", object_repr="bob")
    assert entry.via == "django admin"
    assert entry.before == {"groups": [], "roles": []} and entry.after == {"groups": ["author"], "roles": ["author"]}


def test_deleting_a_user_in_the_admin_is_audited(admin_client):
    user = UserFactory(username="carol")
    response = admin_client.post(reverse("admin:auth_user_delete", args=[user.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not type(user).objects.filter(pk=user.pk).exists()
    assert AuditLog.objects.get(action="user.delete").before["username"] == "carol"


def test_creating_a_group_in_the_admin_is_audited(admin_client):
    response = admin_client.post(reverse("admin:auth_group_add"), {"name": f"team-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 302
    assert AuditLog.objects.filter(action="group.create", via="django admin").count() == 1


def test_nothing_in_the_admin_writes_skills_unaudited(admin_client, skill):
    """The disable round trip leaves exactly one audit row per change and touches no version."""
    url = reverse("admin:registry_skill_change", args=[skill.pk])
    admin_client.post(url, {"enabled": ""})
    admin_client.post(url, {"enabled": "on"})
    assert list(
        AuditLog.objects.filter(object_type="skill", action__startswith="skill.").values_list("action", flat=True)
    ) == [
        "skill.enable",
        "skill.disable",
    ]
    assert Skill.objects.get(pk=skill.pk).versions.count() == 2


def test_setting_a_password_in_the_admin_is_audited_without_the_password(admin_client):
    user = UserFactory(username="dora")
    url = reverse("admin:auth_user_password_change", args=[user.pk])
    secret = "a-new-Passw0rd-for-dora"
    response = admin_client.post(url, {"password1": secret, "password2": secret, "usable_password": "true"})
    assert response.status_code == 302, response.content[:2000]
    user.refresh_from_db()
    assert user.check_password(secret)
    entry = AuditLog.objects.get(action="user.password", object_repr="dora")
    assert entry.via == "django admin" and secret not in str(entry.before) + str(entry.after)
