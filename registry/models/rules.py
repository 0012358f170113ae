"""Force-include rules: a pattern on the query that adds skills (and an instruction) to a turn."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ForceIncludeRule(models.Model):
    """seed 004: a regex on the user query that adds skills (and an instruction) to a turn."""

    name = models.CharField(max_length=100, unique=True)
    pattern = models.TextField()
    skills = models.JSONField(default=list)
    tools = models.JSONField(default=list, blank=True)
    instruction = models.TextField(blank=True)
    auto_invoke = models.JSONField(null=True, blank=True)
    priority = models.IntegerField(default=0)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return self.name
