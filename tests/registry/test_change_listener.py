"""Cached reads on PostgreSQL learn of changes by LISTEN/NOTIFY instead of a query per request.

Every test commits (transaction=True) because notifications are only sent on commit, and one
publishes from another process, as a second web or worker process would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client

from registry.models import RegistryState
from registry.readmodel import generation
from registry.readmodel.generation import change_listener, heard_changes
from registry.roles import ANALYST
from registry.services.generation import registry_changed
from registry.services.tokens import api_token_revoke
from tests.factories import make_skill_md, publish, user_with_role
from tests.worker import ROOT, _database_url_for_tests, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def listening(settings, make_token, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...): SQLite has no LISTEN/NOTIFY")
    settings.REGISTRY_LISTEN = True
    # Only notifications may tell these tests' reads about a change, not the once-a-second re-read.
    monkeypatch.setattr(generation, "_VERIFY_SECONDS", 3600)
    return Client(headers={"authorization": f"Bearer {make_token(['skills:read'])}"})


def skill_md(client: Client, name: str = "demo-skill"):
    return client.get(f"/api/v1/skills/{name}/SKILL.md")


def manage_in_another_process(*args: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings", "DATABASE_URL": _database_url_for_tests()}
    command = [sys.executable, "manage.py", *args]
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)


def test_a_warm_read_makes_no_query(listening, django_assert_num_queries):
    publish(description="First text.")
    assert skill_md(listening).status_code == 200
    assert heard_changes() is not None

    with django_assert_num_queries(0):
        response = skill_md(listening)

    assert response.status_code == 200
    assert b"First text." in response.content


def test_a_publish_from_another_process_is_served_on_the_next_read(listening, tmp_path):
    publish(description="First text.")
    assert b"First text." in skill_md(listening).content
    folder = tmp_path / "demo-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(make_skill_md(description="Second text."))

    manage_in_another_process("skills", "import", "--source", "user", str(folder))

    response = skill_md(listening)
    assert b"Second text." in response.content
    assert response["X-Skill-Version"] == "2"


@contextmanager
def notifications_off():
    """Writes on this connection fire no triggers, so send no NOTIFY."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = DEFAULT")


def refused_soon(client: Client) -> bool:
    # Another connection's change reaches this process when PostgreSQL forwards the notification,
    # a moment after the COMMIT returned; the re-read bound is an hour in these tests.
    deadline = time.monotonic() + 2
    while skill_md(client).status_code != 401:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_this_process_sees_its_own_writes_at_once_without_a_notification(listening, make_token):
    publish(description="First text.")
    assert b"First text." in skill_md(listening).content
    with notifications_off():
        publish(description="Second text.")
    assert b"Second text." in skill_md(listening).content

    with notifications_off():
        api_token_revoke(name="token-0")
    assert skill_md(listening).status_code == 401

    user = user_with_role(ANALYST, username="reader")
    client = Client(headers={"authorization": f"Bearer {make_token(['skills:read'], user=user)}"})
    assert skill_md(client).status_code == 200
    user.is_active = False
    with notifications_off():
        user.save(update_fields=["is_active"])
    assert skill_md(client).status_code == 401


def test_a_write_answers_once_its_notification_has_come_back(listening, monkeypatch):
    monkeypatch.setattr(generation, "_ECHO_SECONDS", 10)  # only a sign of something broken
    publish()
    assert skill_md(listening).status_code == 200  # this process listens
    following = generation.registry_generation() + 1

    def commit_a_moment_later() -> None:
        time.sleep(0.05)
        with transaction.atomic():
            registry_changed()
        connection.close()  # this thread's own

    writer = threading.Thread(target=commit_a_moment_later)
    writer.start()
    # As a write's on_commit does: wait for generation `following` to be notified back.
    change_listener.committed(following)
    heard = change_listener._notified
    writer.join()

    assert heard == following


def test_a_token_revoked_or_a_user_deactivated_elsewhere_is_refused_once_heard(listening, make_token):
    publish()
    assert skill_md(listening).status_code == 200
    manage_in_another_process("tokens", "revoke", "token-0")
    assert refused_soon(listening)

    user = user_with_role(ANALYST, username="reader")
    client = Client(headers={"authorization": f"Bearer {make_token(['skills:read'], user=user)}"})
    assert skill_md(client).status_code == 200
    # A bulk update sends no Django signal: only the trigger's notification tells the cache.
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert refused_soon(client)


def test_a_recreated_state_row_is_read_again_rather_than_trusting_the_old_number(listening):
    # A restored or flushed database: the generation row comes back at a new random number and
    # the skills change without any bump this process could have heard as a number.
    publish(description="First text.")
    assert b"First text." in skill_md(listening).content
    RegistryState.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE registry_skillversion SET skill_md = replace(skill_md, 'First', 'Restored')")

    assert b"Restored text." in skill_md(listening).content


def test_a_lost_listen_connection_falls_back_to_querying(listening):
    publish(description="First text.")
    assert b"First text." in skill_md(listening).content
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [generation.LISTENER_NAME],
        )
        assert cursor.fetchone()[0] is True
    publish(description="Second text.")

    assert b"Second text." in skill_md(listening).content
    assert heard_changes() is None  # reconnecting waits a few seconds; meanwhile every read queries
    change_listener.close()  # forget the back-off: the next read listens again
    assert b"Second text." in skill_md(listening).content
    assert heard_changes() is not None


def test_a_change_nobody_announced_is_seen_after_the_re_read(listening, monkeypatch):
    # A listening connection can die without a word; the row is read again once a second.
    monkeypatch.setattr(generation, "_VERIFY_SECONDS", 0.2)
    publish(description="First text.")
    assert b"First text." in skill_md(listening).content
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # triggers off: no NOTIFY
        cursor.execute("UPDATE registry_skillversion SET skill_md = replace(skill_md, 'First', 'Quiet')")
        cursor.execute("UPDATE registry_registrystate SET generation = generation + 1")
        cursor.execute("SET session_replication_role = DEFAULT")

    wait_for(lambda: b"Quiet text." in skill_md(listening).content, timeout=10, message="the re-read")


def test_a_token_whose_owner_lost_the_role_is_refused_once_heard(listening, make_token):
    publish()
    user = user_with_role(ANALYST, username="demoted")
    client = Client(headers={"authorization": f"Bearer {make_token(['skills:read'], user=user)}"})
    assert skill_md(client).status_code == 200
    # A bulk delete of the membership sends no Django signal: only the trigger's notification
    # tells the fast path's token cache that the owner's role changed.
    get_user_model().groups.through.objects.filter(user_id=user.pk).delete()
    deadline = time.monotonic() + 2
    while (response := skill_md(client)).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert response.status_code == 403
    assert "owner's role" in response.json()["detail"]


def test_a_role_taken_away_here_is_enforced_on_the_next_request(listening, make_token):
    publish()
    user = user_with_role(ANALYST, username="demoted-here")
    client = Client(headers={"authorization": f"Bearer {make_token(['skills:read'], user=user)}"})
    assert skill_md(client).status_code == 200
    with notifications_off():
        user.groups.clear()
    assert skill_md(client).status_code == 403
