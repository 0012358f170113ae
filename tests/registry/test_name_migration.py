"""Migration 0011 makes skill names unique per source regardless of case. Rows that already
clash stop it with their names (the database's own error would name only the index); rows
that do not clash, including the same name in two sources, migrate as they are."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("registry", "0010_queued_offer")]
AFTER = [("registry", "0011_skill_name_case_insensitive")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest():
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_existing_names_differing_only_by_case_stop_the_migration_with_their_names():
    apps = migrate(BEFORE)
    try:
        Skill = apps.get_model("registry", "Skill")
        Skill.objects.create(name="UPPER-case", source="user")
        Skill.objects.create(name="upper-case", source="user")

        with pytest.raises(RuntimeError, match="'UPPER-case' and 'upper-case' \\(user\\)"):
            migrate(AFTER)
    finally:
        apps.get_model("registry", "Skill").objects.all().delete()
        latest()


def test_names_that_do_not_clash_migrate_and_the_constraint_then_holds():
    apps = migrate(BEFORE)
    try:
        Skill = apps.get_model("registry", "Skill")
        Skill.objects.create(name="shadowed", source="bundled")
        Skill.objects.create(name="shadowed", source="user")
        Skill.objects.create(name="Mixed", source="user")

        apps = migrate(AFTER)

        Skill = apps.get_model("registry", "Skill")
        assert Skill.objects.count() == 3
        with pytest.raises(IntegrityError), transaction.atomic():
            Skill.objects.create(name="mixed", source="user")
    finally:
        latest()
