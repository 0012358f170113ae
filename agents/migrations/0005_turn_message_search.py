"""A trigram index for the turn list's "message contains" (`q`) on PostgreSQL.

Django's icontains compares UPPER(message), so the index is on that expression. It is created
here rather than declared on the model: other databases have no trigram index (the list still
works there, scanning), and pg_trgm must be installed first. Without the right to install the
extension the migration leaves the index out rather than fail: searching then scans, as before.
"""

from django.db import migrations, transaction


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception:  # noqa: BLE001 - the extension is an optimisation; its absence is not an error
        return
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS turn_message_trgm ON agents_agentturn USING gin (UPPER(message) gin_trgm_ops)"
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS turn_message_trgm")


class Migration(migrations.Migration):
    dependencies = [("agents", "0004_turn_list")]

    operations = [migrations.RunPython(create, drop)]
