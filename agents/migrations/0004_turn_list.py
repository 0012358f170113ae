"""Origin and failure cause on turns (for the turn list), and the indexes the list reads by."""

from django.conf import settings
from django.db import migrations, models


def causes_of_finished_turns(apps, schema_editor):
    """Turns that ended before causes were kept get theirs from their error and trace. Their
    origin stays `api`: which turns the playground sent was not recorded."""
    # The classifier is plain Python with no model access: importing it keeps one definition.
    from agents.turns.causes import failure_cause

    AgentTurn = apps.get_model("agents", "AgentTurn")
    TraceEvent = apps.get_model("agents", "TraceEvent")
    ended = AgentTurn.objects.filter(status__in=("failed", "cancelled")).only("pk", "status", "error")
    for turn in ended.iterator():
        failed = TraceEvent.objects.filter(turn_id=turn.pk, type__in=("tool_error", "tool_refused"))
        failed |= TraceEvent.objects.filter(turn_id=turn.pk, type="tool_call", data__ok=False)
        tools = [str(tool) for tool in failed.values_list("data__tool", flat=True) if tool]
        cause = failure_cause(status=turn.status, error=turn.error, failed_tools=tools)
        AgentTurn.objects.filter(pk=turn.pk).update(failure_cause=cause.cause, failure_detail=cause.detail)


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0003_prompt_text'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='agentturn',
            name='failure_cause',
            field=models.CharField(blank=True, choices=[('aborted', 'aborted'), ('tool_error', 'tool errors'), ('model_error', 'model errors'), ('budget_exceeded', 'budget exceeded'), ('cancelled', 'cancelled'), ('other', 'other errors')], max_length=24),
        ),
        migrations.AddField(
            model_name='agentturn',
            name='failure_detail',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='agentturn',
            name='origin',
            field=models.CharField(choices=[('playground', 'playground'), ('api', 'API'), ('eval', 'eval')], default='api', max_length=16),
        ),
        migrations.AlterField(
            model_name='agentturn',
            name='created_at',
            field=models.DateTimeField(auto_now_add=True),
        ),
        migrations.AddIndex(
            model_name='agentturn',
            index=models.Index(fields=['-created_at'], include=('status', 'origin', 'feedback_rating', 'failure_cause', 'failure_detail', 'user', 'model'), name='turn_newest'),
        ),
        migrations.AddIndex(
            model_name='agentturn',
            index=models.Index(fields=['status', '-created_at'], name='turn_status_newest'),
        ),
        migrations.AddIndex(
            model_name='agentturn',
            index=models.Index(fields=['user', '-created_at'], name='turn_user_newest'),
        ),
        migrations.AddIndex(
            model_name='agentturn',
            index=models.Index(fields=['model', '-created_at'], name='turn_model_newest'),
        ),
        migrations.RunPython(causes_of_finished_turns, migrations.RunPython.noop),
    ]
