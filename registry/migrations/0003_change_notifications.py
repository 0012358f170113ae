"""PostgreSQL triggers that NOTIFY listeners of registry changes (registry/readmodel/generation.py).

Triggers rather than Python signals so that every writer is covered: services, the admin, the
CLI, raw SQL and a test flush alike. Other databases get nothing; their readers query instead.
"""

from django.conf import settings
from django.db import migrations

CHANNEL = "skill_registry_changes"

FUNCTION = f"""
CREATE OR REPLACE FUNCTION skill_registry_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] = 'generation' THEN
        PERFORM pg_notify('{CHANNEL}', NEW.generation::text);
    ELSE
        PERFORM pg_notify('{CHANNEL}', TG_ARGV[0]);
    END IF;
    RETURN NULL;
END
$$;
"""


def _triggers(apps):
    state = apps.get_model("registry", "RegistryState")._meta.db_table
    token = apps.get_model("registry", "ApiToken")._meta.db_table
    user = apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table
    return [
        # (name, table, events, granularity, payload)
        ("skill_registry_generation", state, "UPDATE OF generation", "ROW", "generation"),
        ("skill_registry_generation_reset", state, "INSERT OR DELETE", "ROW", "reset"),
        ("skill_registry_generation_truncate", state, "TRUNCATE", "STATEMENT", "reset"),
        ("skill_registry_token", token, "UPDATE OF revoked_at, scopes, user_id, secret_hash OR DELETE", "ROW", "tokens"),
        ("skill_registry_token_truncate", token, "TRUNCATE", "STATEMENT", "tokens"),
        ("skill_registry_user", user, "UPDATE OF is_active OR DELETE", "ROW", "tokens"),
        ("skill_registry_user_truncate", user, "TRUNCATE", "STATEMENT", "tokens"),
    ]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION)
    for name, table, events, granularity, payload in _triggers(apps):
        schema_editor.execute(
            f'CREATE TRIGGER {name} AFTER {events} ON "{table}" '
            f"FOR EACH {granularity} EXECUTE FUNCTION skill_registry_notify('{payload}')"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, table, *_ in _triggers(apps):
        schema_editor.execute(f'DROP TRIGGER IF EXISTS {name} ON "{table}"')
    schema_editor.execute("DROP FUNCTION IF EXISTS skill_registry_notify()")


class Migration(migrations.Migration):
    dependencies = [("registry", "0002_roles_and_state"), migrations.swappable_dependency(settings.AUTH_USER_MODEL)]
    operations = [migrations.RunPython(forwards, backwards)]
