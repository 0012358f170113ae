"""The `skills` and `tokens` management commands, run as a user would run them."""

from __future__ import annotations

import os
import stat
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class

from registry.management.base import RegistryCommand
from registry.models import ApiToken, AuditLog, Skill, SkillVersion
from registry.roles import AUTHOR
from registry.services.label_policies import label_policy_set
from registry.services.labels import label_delete
from tests.factories import UserFactory, make_skill_md, user_with_role

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write_skill(root: Path, name: str, **fields) -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(make_skill_md(name, **fields))
    script = folder / "scripts" / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    return folder


def test_sync_imports_bundled_skills_and_a_second_sync_rereads_nothing(settings, tmp_path):
    settings.BUNDLED_SKILLS_DIR = tmp_path
    write_skill(tmp_path, "alpha")
    write_skill(tmp_path, "beta")

    first = run("skills", "sync")
    second = run("skills", "sync")

    assert "2 published" in first
    assert "0 published, 0 unchanged, 0 failed, 2 skipped" in second
    assert set(Skill.objects.values_list("name", "source")) == {("alpha", "bundled"), ("beta", "bundled")}


def test_sync_publishes_a_new_version_only_for_the_changed_folder(settings, tmp_path):
    settings.BUNDLED_SKILLS_DIR = tmp_path
    write_skill(tmp_path, "alpha")
    write_skill(tmp_path, "beta")
    run("skills", "sync")

    (tmp_path / "beta" / "SKILL.md").write_text(make_skill_md("beta", description="A changed description for beta."))
    output = run("skills", "sync")

    assert "published beta v2" in output
    assert "1 skipped" in output
    assert Skill.objects.get(name="alpha").latest_version == 1


def labels_of(name: str) -> dict[str, int]:
    return {label.name: label.version.number for label in Skill.objects.get(name=name).labels.select_related("version")}


def test_sync_labels_the_bundled_skills_production_and_follows_new_versions_until_someone_moves_it(settings, tmp_path):
    settings.BUNDLED_SKILLS_DIR = tmp_path
    for name in ("alpha", "beta", "gamma"):
        write_skill(tmp_path, name)

    first = run("skills", "sync")

    assert "labelled alpha v1 production" in first
    assert {name: labels_of(name) for name in ("alpha", "beta", "gamma")} == {
        "alpha": {"production": 1},
        "beta": {"production": 1},
        "gamma": {"production": 1},
    }
    assert AuditLog.objects.filter(action="label.move", via="cli").count() == 3
    # A person rolls beta back after its v2, and removes gamma's label: the sync leaves both be.
    for name in ("alpha", "beta"):
        (tmp_path / name / "SKILL.md").write_text(make_skill_md(name, description=f"Second {name}."))
    run("skills", "sync")
    run("skills", "label", "beta", "production", "1")
    label_delete(skill=Skill.objects.get(name="gamma"), label="production")
    for name in ("alpha", "beta", "gamma"):
        (tmp_path / name / "SKILL.md").write_text(make_skill_md(name, description=f"Third {name}."))

    third = run("skills", "sync")

    assert "labelled alpha v3 production" in third and "labelled beta" not in third and "labelled gamma" not in third
    assert (labels_of("alpha"), labels_of("beta"), labels_of("gamma")) == ({"production": 3}, {"production": 1}, {})
    assert "labelled" not in run("skills", "sync")  # nothing changed, nothing moved


def test_sync_moves_no_label_that_a_label_policy_protects(settings, tmp_path):
    settings.BUNDLED_SKILLS_DIR = tmp_path
    write_skill(tmp_path, "alpha")
    label_policy_set(label="production", roles=["admin"])

    output = run("skills", "sync")

    assert "published alpha v1" in output and "labelled" not in output
    assert "'production' has a label policy, so the sync moved no label" in output
    assert labels_of("alpha") == {}


def test_the_bundled_skills_folder_syncs_without_errors():
    output = run("skills", "sync")
    assert "0 failed" in output
    assert Skill.objects.filter(source="bundled").count() >= 8


def test_import_then_export_round_trips_bytes_and_executable_bits(tmp_path):
    source = write_skill(tmp_path / "in", "gamma", tags=["x", "y"])
    run("skills", "import", str(source))
    run("skills", "export", "gamma", str(tmp_path / "out"))

    exported = tmp_path / "out" / "gamma"
    assert (exported / "SKILL.md").read_bytes() == (source / "SKILL.md").read_bytes()
    assert (exported / "scripts" / "run.sh").read_bytes() == (source / "scripts" / "run.sh").read_bytes()
    assert os.stat(exported / "scripts" / "run.sh").st_mode & stat.S_IXUSR
    assert Skill.objects.get(name="gamma").source == "workspace"


def test_import_of_a_zip_and_of_a_folder_of_skills(tmp_path):
    folder = write_skill(tmp_path / "zipsrc", "delta")
    archive = tmp_path / "delta.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in folder.rglob("*"):
            if file.is_file():
                zf.write(file, f"delta/{file.relative_to(folder)}")
    write_skill(tmp_path / "many", "one")
    write_skill(tmp_path / "many", "two")

    assert "published delta v1" in run("skills", "import", str(archive))
    assert "2 published" in run("skills", "import", str(tmp_path / "many"), "--source", "user")
    assert Skill.objects.get(name="two").source == "user"


def test_import_of_a_bad_skill_reports_the_line_and_writes_nothing(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")

    with pytest.raises(CommandError, match="description"):
        run("skills", "import", str(folder))

    assert not Skill.objects.exists()
    assert not SkillVersion.objects.exists()


def test_reimporting_identical_content_creates_no_version(tmp_path):
    folder = write_skill(tmp_path, "same")
    run("skills", "import", str(folder))
    assert "unchanged same v1" in run("skills", "import", str(folder))
    assert SkillVersion.objects.count() == 1


def test_validate_prints_warnings_with_line_numbers_and_fails_on_errors(tmp_path):
    good = tmp_path / "Bad_Name"
    good.mkdir()
    (good / "SKILL.md").write_text("---\nname: Bad_Name\ndescription: Works anyway.\n---\nBody\n")
    bad = tmp_path / "SKILL.md"
    bad.write_text("---\nname: x\n---\n")

    output = run("skills", "validate", str(good))
    assert ":2: warning:" in output

    with pytest.raises(CommandError):
        run("skills", "validate", str(bad))


def test_list_info_enable_disable(tmp_path):
    run("skills", "import", str(write_skill(tmp_path, "epsilon", tags=["demo"])))

    assert "epsilon" in run("skills", "list")
    assert '"tags": [\n    "demo"' in run("skills", "info", "epsilon")

    run("skills", "disable", "epsilon")
    assert "epsilon" not in run("skills", "list")
    assert "disabled" in run("skills", "list", "--all")
    run("skills", "enable", "epsilon")
    assert Skill.objects.get(name="epsilon").enabled
    assert AuditLog.objects.filter(action="skill.disable").exists()


def test_list_shows_shadowed_skills_with_all(tmp_path):
    run("skills", "import", str(write_skill(tmp_path / "a", "zeta")), "--source", "bundled")
    run("skills", "import", str(write_skill(tmp_path / "b", "zeta")), "--source", "workspace")

    assert run("skills", "list").count("zeta") == 1
    assert "shadowed by workspace" in run("skills", "list", "--all")


def test_info_of_an_unknown_skill_is_a_clear_error():
    with pytest.raises(CommandError, match="No skill named 'nope'"):
        run("skills", "info", "nope")


def test_tokens_create_prints_the_secret_once_and_stores_only_its_hash():
    user_with_role(AUTHOR, username="robot")
    secret = run("tokens", "create", "ci", "--user", "robot", "--scopes", "skills:read,usage:write").strip()

    token = ApiToken.objects.get(name="ci")
    assert token.secret_hash == ApiToken.hash_secret(secret)
    assert secret not in str(ApiToken.objects.values().get())
    assert token.scopes == ["skills:read", "usage:write"]

    run("tokens", "revoke", "ci")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_tokens_create_rejects_unknown_scopes():
    UserFactory(username="robot")
    with pytest.raises(CommandError, match="Unknown scopes: skills:delete"):
        run("tokens", "create", "bad", "--user", "robot", "--scopes", "skills:delete")


def test_ensure_admin_creates_the_account_once_and_prints_how_to_log_in(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "boss")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "s3cret-pass")

    output = run("ensure_admin")
    run("ensure_admin")

    from django.contrib.auth import get_user_model

    boss = get_user_model().objects.get(username="boss")
    assert boss.is_superuser and boss.check_password("s3cret-pass")
    assert "Log in as 'boss'" in output


def test_ensure_admin_generates_a_password_keeps_it_and_audits_the_account(monkeypatch, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)

    first = run("ensure_admin")
    again = run("ensure_admin")

    from django.contrib.auth import get_user_model

    password = (tmp_path / "admin-password.txt").read_text().strip()
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    assert stat.S_IMODE((tmp_path / "admin-password.txt").stat().st_mode) == 0o600
    assert f"password: {password}" in first and f"password: {password}" in again
    assert list(AuditLog.objects.filter(object_repr="admin").values_list("action", "via")) == [("user.create", "cli")]


# --- export: DEST/NAME/ for one or all, labels that a skill lacks ----------------------------


def publish_versions(name: str, count: int) -> None:
    from tests.factories import publish

    for number in range(1, count + 1):
        publish(name, description=f"{name} version {number}.")


def test_export_of_one_skill_and_of_all_write_the_same_layout(tmp_path):
    publish_versions("alpha", 1)
    publish_versions("beta", 1)

    run("skills", "export", "alpha", str(tmp_path / "one"))
    run("skills", "export", "--all", str(tmp_path / "all"))

    assert (tmp_path / "one" / "alpha" / "SKILL.md").read_bytes() == (
        tmp_path / "all" / "alpha" / "SKILL.md"
    ).read_bytes()
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == ["alpha", "beta"]


def test_export_all_with_a_label_skips_skills_without_it_and_exports_the_rest(tmp_path):
    publish_versions("alpha", 2)
    publish_versions("beta", 2)
    run("skills", "label", "beta", "production", "1")

    output = run("skills", "export", "--all", str(tmp_path / "out"), "--label", "production")

    assert "skipped alpha: has no label 'production'." in output
    assert "exported beta v1" in output
    assert "1 exported, 1 skipped, 0 failed" in output
    assert "beta version 1." in (tmp_path / "out" / "beta" / "SKILL.md").read_text()
    assert not (tmp_path / "out" / "alpha").exists()


def test_export_without_a_label_gives_what_the_api_serves_production_else_latest(tmp_path):
    publish_versions("alpha", 2)
    publish_versions("beta", 2)
    run("skills", "label", "beta", "production", "1")

    output = run("skills", "export", "--all", str(tmp_path / "out"))

    assert "exported alpha v2" in output and "exported beta v1" in output


def test_export_of_one_skill_without_the_label_is_an_error(tmp_path):
    publish_versions("alpha", 1)
    with pytest.raises(CommandError, match="'alpha' has no label 'staging'"):
        run("skills", "export", "alpha", str(tmp_path / "out"), "--label", "staging")


def test_export_all_into_a_used_folder_exports_the_others_then_fails(tmp_path):
    publish_versions("alpha", 1)
    publish_versions("beta", 1)
    (tmp_path / "out" / "alpha").mkdir(parents=True)
    (tmp_path / "out" / "alpha" / "mine.txt").write_text("keep me")
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="1 skill"):
        call_command("skills", "export", "--all", str(tmp_path / "out"), stdout=out, stderr=err)

    assert "failed alpha" in err.getvalue()
    assert (tmp_path / "out" / "beta" / "SKILL.md").exists()
    assert (tmp_path / "out" / "alpha" / "mine.txt").read_text() == "keep me"


# --- list: which version each column is, and the labels ----------------------------------


def test_list_shows_latest_and_served_versions_and_the_labels():
    publish_versions("alpha", 3)
    publish_versions("beta", 1)
    run("skills", "label", "alpha", "production", "2")
    run("skills", "label", "alpha", "staging", "3")
    err = StringIO()
    out = StringIO()
    call_command("skills", "list", stdout=out, stderr=err)

    header, alpha, beta = out.getvalue().splitlines()
    assert header.split()[:6] == ["NAME", "SOURCE", "LATEST", "SERVED", "LABELS", "DESCRIPTION"]
    assert alpha.split()[:6] == ["alpha", "user", "v3", "v2", "production=v2", "staging=v3"]
    assert beta.split()[:5] == ["beta", "user", "v1", "v1", "-"]
    assert "production, else latest" in err.getvalue()


# --- tokens list ----------------------------------------------------------------------------


def test_tokens_list_shows_every_token_without_its_secret():
    user_with_role(AUTHOR, username="robot")
    secret = run("tokens", "create", "reader", "--user", "robot", "--scopes", "skills:read").strip()
    run("tokens", "create", "writer", "--user", "robot", "--scopes", "skills:write,skills:read")
    run("tokens", "revoke", "writer")
    ApiToken.objects.filter(name="reader").update(last_used_at=ApiToken.objects.get(name="reader").created_at)

    header, reader, writer = run("tokens", "list").splitlines()

    assert header.split() == ["NAME", "USER", "SCOPES", "CREATED", "LAST", "USED", "REVOKED"]
    assert reader.split()[:3] == ["reader", "robot", "skills:read"]
    assert reader.split()[-1] == "-" and reader.count("UTC") == 2  # created, last used; not revoked
    assert writer.split()[:3] == ["writer", "robot", "skills:read,skills:write"]
    assert writer.count("UTC") == 2  # created, revoked; never used
    output = run("tokens", "list")
    assert secret not in output and secret[:12] not in output


def test_tokens_list_with_no_tokens_says_how_to_make_one():
    assert "tokens create" in run("tokens", "list")


def _write_uipath_size_skill(root: Path, files: int) -> Path:
    """A folder shaped like UiPath's `uipath-rpa` skill: SKILL.md and 701 small reference files."""
    folder = root / "uipath-rpa"
    (folder / "references" / "activities").mkdir(parents=True)
    (folder / "SKILL.md").write_text(make_skill_md("uipath-rpa", description="Build UiPath RPA workflows."))
    for n in range(files - 1):
        (folder / "references" / "activities" / f"activity-{n:04}.md").write_text(f"# Activity {n}\n")
    return folder


def test_a_skill_over_the_file_limit_is_refused_naming_the_setting_and_imports_once_it_is_raised(settings, tmp_path):
    folder = _write_uipath_size_skill(tmp_path, files=702)
    with pytest.raises(CommandError, match="more than 500 files.*SKILL_BUNDLE_MAX_FILES"):
        run("skills", "import", str(folder))
    assert not Skill.objects.filter(name="uipath-rpa").exists()

    settings.SKILL_BUNDLE_MAX_FILES = 1000
    run("skills", "import", str(folder))
    assert SkillVersion.objects.get(skill__name="uipath-rpa").files.count() == 701  # SKILL.md is kept apart


def test_every_project_command_starts_without_the_site_s_system_checks():
    """The checks import the URLconf and the admin (almost half of a short command's time) and are
    said where the site starts; a command of this project skips them, so a new one must too."""
    commands = {name: app for name, app in get_commands().items() if app in ("registry", "agents")}
    assert {"skills", "tokens", "users", "keys", "analytics", "ensure_admin", "catalog", "skills_eval"} <= set(commands)
    for name, app in commands.items():
        command = load_command_class(app, name)
        assert isinstance(command, RegistryCommand) and command.requires_system_checks == [], name
