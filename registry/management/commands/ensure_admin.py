"""Make sure an admin account exists and say how to log in (used by `make run`).

The username and password come from DJANGO_SUPERUSER_USERNAME / DJANGO_SUPERUSER_PASSWORD.
Without a password, a random one is generated on first creation and kept in var/ (mode 600)
so later runs can print it again; setting the variable later resets the password to it.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import CommandParser

from config.local_state import private_file_create
from registry.management.base import RegistryCommand
from registry.services.accounts import account_admin_ensure
from registry.services.audit import Actor


class Command(RegistryCommand):
    help = "Create the admin account if missing and print how to log in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args, url: str, **options) -> None:
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME") or "admin"
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD") or ""
        password_file = settings.VAR_DIR / "admin-password.txt"

        ensured = account_admin_ensure(username=username, password=password, actor=Actor(via="cli"))
        if ensured.generated_password:
            # Replaced, not rewritten: an existing file keeps its old mode, a new one is 0600.
            password_file.unlink(missing_ok=True)
            private_file_create(password_file, ensured.generated_password + "\n")
        if ensured.created:
            how = f"password: {password or ensured.generated_password}"
        elif password:
            how = "password: the value of DJANGO_SUPERUSER_PASSWORD"
        elif password_file.exists():
            how = f"password: {password_file.read_text().strip()}"
        else:
            how = "password: the one you set (or run `python manage.py changepassword " + username + "`)"

        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Skill Registry: open {url}"))
        self.stdout.write(f"Log in as '{username}', {how}")
        self.stdout.write("")
