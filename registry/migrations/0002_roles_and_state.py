"""Create the console roles (SPEC §3) as groups, and the registry's generation row."""

import secrets

from django.db import migrations

ROLES = ("admin", "author", "analyst")


def forwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)
    # A random start: see registry/readmodel/generation.py.
    apps.get_model("registry", "RegistryState").objects.get_or_create(pk=1, defaults={"generation": secrets.randbelow(2**40) + 1})


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("registry", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(forwards, backwards)]
