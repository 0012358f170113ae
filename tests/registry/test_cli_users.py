"""The `users` management command, run as a user would run it: create, set-role, list."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from registry.models import AuditLog
from registry.roles import user_roles
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "a-long-passphrase"


def run(*args: str) -> str:
    out = StringIO()
    call_command("users", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def roles(username: str) -> set[str]:
    return user_roles(User.objects.get(username=username))


@pytest.mark.parametrize("role", ["admin", "author", "analyst"])
def test_create_gives_the_account_its_role_and_password(role):
    output = run("create", "ann", "--role", role, "--password", PASSWORD)

    assert f"Created ann ({role})" in output
    assert roles("ann") == {role}
    assert authenticate(username="ann", password=PASSWORD) is not None
    user = User.objects.get(username="ann")
    assert user.is_staff == user.is_superuser == (role == "admin")
    audit = AuditLog.objects.get(action="user.create", object_repr="ann")
    assert audit.via == "cli" and audit.after["roles"] == [role]
    assert PASSWORD not in str(audit.after)


def test_without_password_it_asks_twice(monkeypatch):
    answers = iter([PASSWORD, PASSWORD])
    prompts = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or next(answers))

    run("create", "ann", "--role", "author")

    assert len(prompts) == 2
    assert authenticate(username="ann", password=PASSWORD) is not None


def test_a_mismatched_password_creates_nothing(monkeypatch):
    answers = iter([PASSWORD, PASSWORD + "x"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))

    with pytest.raises(CommandError, match="do not match"):
        run("create", "ann", "--role", "author")
    assert not User.objects.filter(username="ann").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "ann", "--role", "owner", "--password", PASSWORD), "Unknown role 'owner': choose admin, author"),
        (("create", "ann", "--role", "author", "--password", "short"), "Password: This password is too short"),
        (("create", "bad name!", "--role", "author", "--password", PASSWORD), "Username: Enter a valid username"),
        (("set-role", "nobody", "author"), "No user named 'nobody'"),
        (("set-role", "ann", "owner"), "Unknown role 'owner'"),
    ],
)
def test_bad_input_is_a_clear_error(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not User.objects.filter(username__in=["bad name!"]).exists()


def test_an_existing_name_is_refused():
    run("create", "ann", "--role", "author", "--password", PASSWORD)

    with pytest.raises(CommandError, match="already exists"):
        run("create", "ann", "--role", "admin", "--password", PASSWORD)
    assert roles("ann") == {"author"}


def test_set_role_replaces_the_role_and_is_audited():
    user_with_role("admin", username="root")
    run("create", "ann", "--role", "analyst", "--password", PASSWORD)

    assert "ann is now author" in run("set-role", "ann", "author")
    assert roles("ann") == {"author"}
    run("set-role", "ann", "admin")
    assert roles("ann") == {"admin"} and User.objects.get(username="ann").is_superuser
    run("set-role", "ann", "analyst")
    assert roles("ann") == {"analyst"} and not User.objects.get(username="ann").is_superuser

    updates = AuditLog.objects.filter(action="user.update", object_repr="ann").order_by("id")
    assert [row.after["roles"] for row in updates] == [["author"], ["admin"], ["analyst"]]
    assert updates[0].before["roles"] == ["analyst"]


def test_the_last_admin_cannot_be_demoted():
    run("create", "root", "--role", "admin", "--password", PASSWORD)

    with pytest.raises(CommandError, match="last active admin"):
        run("set-role", "root", "author")
    assert roles("root") == {"admin"}

    run("create", "second", "--role", "admin", "--password", PASSWORD)
    run("set-role", "root", "author")
    assert roles("root") == {"author"}


def test_list_shows_each_account_with_its_role():
    run("create", "ann", "--role", "author", "--password", PASSWORD)
    run("create", "zed", "--role", "analyst", "--password", PASSWORD)

    header, ann, zed = run("list").splitlines()

    assert header.split() == ["NAME", "ROLE", "ACTIVE", "LAST", "LOGIN", "TOKENS"]
    assert ann.split() == ["ann", "author", "yes", "-", "0"]
    assert zed.split()[:2] == ["zed", "analyst"]


def test_deactivate_and_activate_are_audited_and_spare_the_last_admin():
    user_with_role("admin", username="root")
    run("create", "ann", "--role", "author", "--password", PASSWORD)

    assert "ann is deactivated." in run("deactivate", "ann")
    assert authenticate(username="ann", password=PASSWORD) is None
    assert "ann is active." in run("activate", "ann")
    assert authenticate(username="ann", password=PASSWORD) is not None
    changes = AuditLog.objects.filter(action="user.update", object_repr="ann").order_by("id")
    assert [(row.after["is_active"], row.via) for row in changes] == [(False, "cli"), (True, "cli")]
    with pytest.raises(CommandError, match="last active admin"):
        run("deactivate", "root")


def test_create_with_a_link_prints_a_one_time_set_password_link(client):
    output = run("create", "ann", "--role", "analyst", "--link", "http://registry.example:8000/")

    link = output.split("(works once): ")[1].strip()
    assert link.startswith("http://registry.example:8000/password/set/")
    assert not User.objects.get(username="ann").has_usable_password()
    path = link.removeprefix("http://registry.example:8000")
    form = client.get(path, follow=True)  # Django moves the token into the session, then shows the form
    assert b"Set your password" in form.content and b"For <b>ann</b>" in form.content
    done = client.post(form.redirect_chain[-1][0], {"new_password1": PASSWORD, "new_password2": PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/login/"
    assert authenticate(username="ann", password=PASSWORD) is not None
    assert b"has been used, has expired" in client.get(path, follow=True).content  # once only
    assert list(AuditLog.objects.filter(object_repr="ann").values_list("action", "via").order_by("id")) == [
        ("user.create", "cli"),
        ("user.password_link", "cli"),
        ("user.password", "set-password link"),
    ]


def test_an_unknown_role_exits_non_zero_from_the_shell():
    manage = Path(__file__).resolve().parents[2] / "manage.py"

    result = subprocess.run(
        [sys.executable, str(manage), "users", "set-role", "nobody", "owner"], capture_output=True, text=True
    )

    assert result.returncode != 0
    assert "Unknown role 'owner'" in result.stderr
