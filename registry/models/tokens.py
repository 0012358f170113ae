"""API tokens and the scopes they grant."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models


class TokenScope(models.TextChoices):
    SKILLS_READ = "skills:read"
    SKILLS_WRITE = "skills:write"
    RULES_WRITE = "rules:write"
    USAGE_WRITE = "usage:write"
    ANALYTICS_READ = "analytics:read"
    AGENT_RUN = "agent:run"
    WEBHOOKS_WRITE = "webhooks:write"
    POLICIES_WRITE = "policies:write"


class ApiToken(models.Model):
    """A bearer token; only the sha256 of the secret is stored, the secret is shown once."""

    name = models.CharField(max_length=100, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    prefix = models.CharField(max_length=12, db_index=True)
    secret_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes
