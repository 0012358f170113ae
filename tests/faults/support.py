"""Helpers for the fault tests, which run the app in real gunicorn processes with private Redis
and PostgreSQL servers that the tests kill and restart (never the shared ones other test runs
use): plain HTTP with a token or a console session, and skips naming a missing server."""

from __future__ import annotations

import http.client
import json
import re
import shutil
from urllib.parse import urlencode

import pytest

from bench._services import PG_BIN


def need_redis_server() -> None:
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed", allow_module_level=True)


def need_postgres_server() -> None:
    if not (PG_BIN / "initdb").exists() or not shutil.which("runuser"):
        pytest.skip(f"PostgreSQL's initdb ({PG_BIN}) and runuser are needed", allow_module_level=True)


class Http:
    """Plain HTTP to a server on 127.0.0.1, with a bearer token or a console session."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.token = token
        self.cookies: dict[str, str] = {}

    def call(self, method: str, path: str, body: dict | None = None, *, form: dict | None = None, timeout: float = 30):
        headers = {}
        payload = None
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            payload, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if form is not None:
            payload, headers["Content-Type"] = urlencode(form).encode(), "application/x-www-form-urlencoded"
            headers["Referer"] = f"http://127.0.0.1:{self.port}{path}"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            content = response.read()
            for header, value in response.getheaders():
                if header.lower() == "set-cookie":
                    name, _, rest = value.partition("=")
                    self.cookies[name] = rest.split(";", 1)[0]
            return response.status, {k.lower(): v for k, v in response.getheaders()}, content
        finally:
            conn.close()

    def login(self, username: str, password: str) -> None:
        status, _, page = self.call("GET", "/login/")
        assert status == 200, page[:300]
        csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1].decode()
        status, headers, page = self.call(
            "POST", "/login/", form={"username": username, "password": password, "csrfmiddlewaretoken": csrf}
        )
        assert status == 302, (status, page[:500])
