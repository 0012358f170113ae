"""With several test processes on PostgreSQL (make test), the migrations run once, not once per
process: the controller migrates a template database before the processes start, and each
process's test database (`test_<name>_gw0`, ...) is created as a copy of it (`CREATE DATABASE ...
TEMPLATE`, Django's TEST["TEMPLATE"]), where Django's migrate then finds nothing left to do.
The template is dropped when the run ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
WORKER_INPUT_KEY = "skill_registry_template_database"


def _postgres() -> dict | None:
    database = settings.DATABASES["default"]
    return database if database["ENGINE"] == "django.db.backends.postgresql" else None


def _url(database: dict, name: str) -> str:
    password = f":{database['PASSWORD']}" if database.get("PASSWORD") else ""
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{database['USER']}{password}@{database['HOST']}{port}/{name}"


class TemplateDatabase:
    """The controller's side: make the template before the processes start, name it to them, drop it."""

    def __init__(self, database: dict) -> None:
        self.database = database
        self.name = f"test_{database['NAME']}_template"[:63]

    def _server(self):
        import psycopg

        return psycopg.connect(
            dbname="postgres",
            user=self.database.get("USER") or None,
            password=self.database.get("PASSWORD") or None,
            host=self.database.get("HOST") or None,
            port=self.database.get("PORT") or None,
            autocommit=True,
        )

    def _drop(self) -> None:
        with self._server() as server:
            server.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._drop()
        with self._server() as server:
            server.execute(f'CREATE DATABASE "{self.name}"')
        migrated = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--run-syncdb", "--noinput", "--verbosity", "0"],
            cwd=ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "config.test_settings",
                "DATABASE_URL": _url(self.database, self.name),
            },
            capture_output=True,
            text=True,
        )
        if migrated.returncode != 0:
            self._drop()
            raise pytest.UsageError(f"migrating the template test database failed:\n{migrated.stdout}{migrated.stderr}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        node.workerinput[WORKER_INPUT_KEY] = self.name

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._drop()


def register(config: pytest.Config) -> None:
    """In the controller of a run with several processes on PostgreSQL."""
    database = _postgres()
    if database is not None and not config.getoption("reuse_db", False):
        config.pluginmanager.register(TemplateDatabase(database), "skill-registry-template-database")


def use_template(config: pytest.Config) -> None:
    """In a test process: create its test database from the template, when there is one."""
    template = getattr(config, "workerinput", {}).get(WORKER_INPUT_KEY)
    if template:
        settings.DATABASES["default"].setdefault("TEST", {})["TEMPLATE"] = template
