"""NOTIFY "tokens" when an account's role changes (superuser flag, group membership, a role group
renamed or deleted): a token's scopes are cut to its owner's role on every request, and token
caches (registry/api/fastpath.py) must drop the owner's tokens at once, or they keep the old role's scopes."""

from django.conf import settings
from django.db import migrations


def _triggers(apps):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    user = user_model._meta.db_table
    membership = user_model._meta.get_field("groups").remote_field.through._meta.db_table
    group = apps.get_model("auth", "Group")._meta.db_table
    return [
        # (name, table, events, granularity)
        ("skill_registry_user_role", user, "UPDATE OF is_superuser", "ROW"),
        ("skill_registry_membership", membership, "INSERT OR UPDATE OR DELETE", "ROW"),
        ("skill_registry_membership_truncate", membership, "TRUNCATE", "STATEMENT"),
        ("skill_registry_group", group, "UPDATE OF name OR DELETE", "ROW"),
        ("skill_registry_group_truncate", group, "TRUNCATE", "STATEMENT"),
    ]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, table, events, granularity in _triggers(apps):
        schema_editor.execute(
            f'CREATE TRIGGER {name} AFTER {events} ON "{table}" '
            f"FOR EACH {granularity} EXECUTE FUNCTION skill_registry_notify('tokens')"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, table, *_ in _triggers(apps):
        schema_editor.execute(f'DROP TRIGGER IF EXISTS {name} ON "{table}"')


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0003_change_notifications"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
