"""Failed-login counts, kept in the database when no shared cache is configured."""

from __future__ import annotations

from django.db import models


class LoginCounter(models.Model):
    """A failed-login count, or a lock's end time, of registry/services/logins.py kept where every
    web process sees it when no shared cache is configured (or while it is down). An expired row
    counts as absent; expired rows are removed as new failures are counted."""

    key = models.CharField(max_length=100, unique=True)
    value = models.FloatField(default=0)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key} = {self.value:g} until {self.expires_at:%Y-%m-%d %H:%M:%S}"
