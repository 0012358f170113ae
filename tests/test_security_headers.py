"""Response headers: a Content-Security-Policy that keeps the browser on this origin, the other
security headers on every kind of response, the TLS settings read from the environment, and no
`Server` header from gunicorn as the Procfile runs it."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from csp.middleware import CSPMiddleware
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.template import engines
from django.test import Client

from tests.factories import publish

ROOT = Path(__file__).resolve().parent.parent

POLICY = {
    "default-src": {"'self'"},
    "img-src": {"'self'", "data:"},
    "object-src": {"'none'"},
    "base-uri": {"'self'"},
    "frame-ancestors": {"'none'"},
    "form-action": {"'self'"},
}

CONSOLE_PAGES = [
    "/",
    "/skills/",
    "/skills/new/",
    "/skills/headers-demo/",
    "/skills/headers-demo/edit/",
    "/skills/headers-demo/versions/",
    "/skills/headers-demo/files/notes.md",
    "/rules/",
    "/rules/new/",
    "/rules/test/",
    "/analytics/",
    "/playground/",
    "/tokens/",
    "/audit/",
    "/admin/",
    "/admin/auth/user/",
    "/api/docs/",
    "/api/docs/?script=",
]


def policy_of(response) -> dict[str, set[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, "no Content-Security-Policy"
    directives = {}
    for directive in filter(None, (part.strip() for part in header.split(";"))):
        name, *values = directive.split()
        directives[name] = set(values)
    return directives


def assert_locked_down(response) -> None:
    policy = policy_of(response)
    for name, values in POLICY.items():
        assert policy.get(name) == values, (name, policy.get(name))
    # Scripts only from this origin (or inline with the request's nonce): never inline as such, nor eval.
    script_src = policy.get("script-src", policy["default-src"])
    assert {source for source in script_src if not source.startswith("'nonce-")} == {"'self'"}
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] in ("same-origin", "strict-origin-when-cross-origin")
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"


class Scripts(HTMLParser):
    """Every <script> start tag's attributes, and every inline event handler (onclick=...)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(dict(attrs))
        self.handlers += [f"<{tag} {name}>" for name, _ in attrs if name.startswith("on")]


@pytest.fixture
def admin_client(admin_user):
    publish(
        "headers-demo",
        description="A skill whose pages are checked for their headers.",
        files=[("notes.md", b"Notes.", False)],
    )
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_every_console_admin_and_docs_page_sends_the_policy_and_runs_no_inline_script(admin_client, path):
    response = admin_client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    assert_locked_down(response)

    if response.headers["Content-Type"].startswith("text/html"):
        page = Scripts()
        page.feed(response.content.decode())
        assert page.handlers == [], "inline event handlers do not run under the policy"
        nonces = {value[len("'nonce-") : -1] for value in policy_of(response).get("script-src", ()) if "nonce" in value}
        for script in page.scripts:
            assert script.get("src") or script.get("nonce") in nonces, f"inline <script> on {path}: {script}"


@pytest.mark.django_db
def test_the_api_its_errors_and_the_login_page_send_the_same_headers(api):
    assert_locked_down(api.get("/api/v1/skills"))
    assert_locked_down(api.get("/api/v1/skills/nothing-here"))  # errors too
    assert_locked_down(Client().get("/login/"))
    assert_locked_down(Client().get("/api/docs/"))  # the redirect to log in


def test_templates_get_a_nonce_that_the_policy_names_only_when_a_page_uses_it(rf):
    request = rf.get("/")
    request.user = AnonymousUser()
    template = engines["django"].from_string('<script nonce="{{ CSP_NONCE }}">start()</script>')
    with_script = CSPMiddleware(lambda request: HttpResponse(template.render(request=request)))(request)
    nonce = re.fullmatch(r'<script nonce="([^"]+)">start\(\)</script>', with_script.content.decode()).group(1)
    assert policy_of(with_script)["script-src"] == {"'self'", f"'nonce-{nonce}'"}

    without = CSPMiddleware(lambda request: HttpResponse("no script"))(rf.get("/"))
    assert policy_of(without)["script-src"] == {"'self'"}


# --- TLS settings from the environment ----------------------------------------------------

PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.test import Client
plain = Client().get("/login/")
proxied = Client().get("/login/", headers={"X-Forwarded-Proto": "https"})
print(json.dumps({
    "settings": {name: getattr(settings, name, None) for name in (
        "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER")},
    "plain": [plain.status_code, plain.headers.get("Location"), plain.headers.get("Strict-Transport-Security")],
    "proxied": [proxied.status_code, proxied.headers.get("Strict-Transport-Security"),
                bool(proxied.cookies["csrftoken"]["secure"])],
}))
"""


def start(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess:
    """Production settings in a fresh process, given these environment variables, asked for /login/."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SECURE_") and key != "TESTING"}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path / "var"), **variables)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def probe(tmp_path: Path, **variables: str) -> dict:
    started = start(tmp_path, **variables)
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout.strip().splitlines()[-1])


def test_plain_http_by_default_no_redirect_no_hsts_no_trusted_proxy_header(tmp_path):
    seen = probe(tmp_path)
    assert seen["settings"] == {
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
    }
    assert seen["plain"] == [200, None, None]
    # A client cannot pass a plain request off as HTTPS with a header nobody said to trust.
    assert seen["proxied"] == [200, None, False]


def test_behind_a_tls_proxy_plain_http_is_redirected_and_https_gets_hsts_and_secure_cookies(tmp_path):
    seen = probe(
        tmp_path,
        SECURE_SSL_REDIRECT="true",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
    )
    assert seen["settings"]["SESSION_COOKIE_SECURE"] is seen["settings"]["CSRF_COOKIE_SECURE"] is True
    assert seen["settings"]["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert seen["plain"] == [301, "https://testserver/login/", None]
    assert seen["proxied"] == [200, "max-age=31536000; includeSubDomains; preload", True]


def test_secure_cookies_can_be_set_without_the_redirect(tmp_path):
    seen = probe(tmp_path, SECURE_COOKIES="true")
    assert seen["settings"]["SESSION_COOKIE_SECURE"] is seen["settings"]["CSRF_COOKIE_SECURE"] is True
    assert seen["settings"]["SECURE_SSL_REDIRECT"] is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SECURE_HSTS_SECONDS", "-1"),
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto: https"),
    ],
)
def test_an_invalid_tls_setting_stops_the_start_up_naming_it(tmp_path, variable, value):
    started = start(tmp_path, **{variable: value})
    assert started.returncode != 0
    assert variable in started.stderr.splitlines()[-1]


# --- gunicorn as the Procfile runs it -------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return probe_socket.getsockname()[1]


def test_gunicorn_as_the_procfile_runs_it_sends_no_server_header(tmp_path):
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    port = free_port()
    env = {**os.environ, "PORT": str(port), "WEB_CONCURRENCY": "1", "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        ["bash", "-c", "exec " + web.removeprefix("web:").strip()],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        responses = []
        deadline = time.monotonic() + 60
        while not responses:
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            assert time.monotonic() < deadline, "gunicorn did not answer within 60 s"
            try:
                for method, path in (("GET", "/login/"), ("GET", "/static/no-such-file.css"), ("HEAD", "/healthz")):
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    connection.request(method, path)
                    response = connection.getresponse()
                    response.read()
                    responses.append((path, response.status, dict(response.getheaders())))
                    connection.close()
            except OSError:
                responses = []
                time.sleep(0.2)
        for path, status, headers in responses:
            assert status < 500, (path, status)
            assert "server" not in {name.lower() for name in headers}, (path, headers)
            assert "Content-Security-Policy" in headers, (path, headers)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()
