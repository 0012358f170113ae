"""The turn list finds the turns that loaded a skill (or failed with it) through their runtime events."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0011_skill_name_case_insensitive"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="usageevent",
            index=models.Index(
                condition=models.Q(("turn__isnull", False)),
                fields=["skill_name", "kind", "turn"],
                name="usage_event_skill_turn",
            ),
        ),
    ]
