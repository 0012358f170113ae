"""The base of the project's management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class RegistryCommand(BaseCommand):
    # Django runs every system check before a command unless told otherwise; the checks import the
    # URLconf and the admin, almost half of what a short command like `tokens list` costs. They are
    # about how the site is set up, and are said where it starts (`migrate`, which `make run`
    # runs first, the Celery worker, `manage.py check`): reading or writing the registry needs
    # none of them.
    requires_system_checks: list[str] = []
