"""The Connect page in a real headless Chromium, its lines copied with its Copy buttons and run
against the live server: the token link opens the token form with the scopes ticked; the
`claude mcp add` line (through a stand-in `claude` that prints what it was given), `.mcp.json`
and VS Code's config each connect the `mcp` package's client; the curl line, the Python example
and `npx skills add` run as copied; with the discovery index off the page says how to turn it on."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from registry.services.labels import label_move
from tests.browser.console_helpers import log_in, new_page, screenshot, user_with_role
from tests.factories import publish
from tests.registry.api.test_discovery_cli import NODE, SKILLS_CLI

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Without `?label=`, /mcp serves every skill at its served version (production, else latest).
SERVED = ["skill://code-review/SKILL.md", "skill://draft-only/SKILL.md"]
DESCRIPTION = "Reviews code changes for bugs and security problems such as SQL injection."


def copied(page, button_label: str) -> str:
    """What the page's Copy button puts on the clipboard, as a person would paste it."""
    page.get_by_role("button", name=button_label).click()
    return page.evaluate("navigator.clipboard.readText()")


def mcp_resources(url: str, headers: dict[str, str], *, handshake: bool) -> list[str]:
    """Connect as an MCP host with this URL and these headers; the resources it lists."""

    async def main():
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await (session.initialize() if handshake else session.discover())
                    listed = await session.list_resources()
                    return sorted(str(resource.uri) for resource in listed.resources)

    # Playwright keeps an event loop running in this thread: the host runs in one of its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def run_shell(line: str, token: str, **env: str) -> subprocess.CompletedProcess:
    environment = {"PATH": os.environ["PATH"], "SKILL_REGISTRY_TOKEN": token, **env}
    return subprocess.run(["bash", "-c", line], env=environment, capture_output=True, text=True, timeout=120)


@pytest.fixture
def published(settings):
    settings.DISCOVERY_LABEL = "production"
    result = publish("code-review", description=DESCRIPTION)
    label_move(skill=result.skill, label="production", version_number=1)
    publish("draft-only", description="Not in production yet.")


def test_the_connect_pages_lines_run_as_copied(live_server, browser, published, tmp_path):
    user_with_role("root", "admin")
    page = new_page(browser, permissions=["clipboard-read", "clipboard-write"])
    log_in(page, live_server.url, "root")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Connect").click()
    expect(page.get_by_role("heading", name="Connect", exact=True)).to_be_visible()
    assert page.locator("#mcp-endpoint").inner_text() == f"{live_server.url}/mcp"
    screenshot(page, "connect-admin")

    # The token the MCP host needs: the link ticks skills:read, and only it.
    page.locator("#connect-mcp").get_by_role("link", name="Create one with skills:read").click()
    expect(page.locator("#token-name")).to_have_value("mcp-host")
    checked = page.locator("input[name=scopes]:checked")
    expect(checked).to_have_count(1)
    expect(checked).to_have_value("skills:read")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-secret").inner_text().strip()
    assert token.startswith("skr_")
    page.go_back()
    page.goto(f"{live_server.url}/connect/")

    # Claude Code's line, run by a stand-in `claude` that prints its arguments one a line.
    line = copied(page, "Copy the claude mcp add line")
    assert line.startswith("claude mcp add --transport http skill-registry ")
    given = run_shell("claude() { printf '%s\\n' \"$@\"; }\n" + line, token)
    arguments = given.stdout.splitlines()
    assert arguments[:5] == ["mcp", "add", "--transport", "http", "skill-registry"]
    url, flag, header = arguments[5:]
    assert (url, flag, header) == (f"{live_server.url}/mcp", "--header", f"Authorization: Bearer {token}")
    name, _, value = header.partition(": ")
    assert mcp_resources(url, {name: value}, handshake=True) == SERVED

    # .mcp.json, with ${SKILL_REGISTRY_TOKEN} from the environment as Claude Code expands it.
    project = json.loads(copied(page, "Copy the .mcp.json config"))["mcpServers"]["skill-registry"]
    headers = {key: value.replace("${SKILL_REGISTRY_TOKEN}", token) for key, value in project["headers"].items()}
    assert project["type"] == "http"
    assert mcp_resources(project["url"], headers, handshake=False) == SERVED

    # VS Code's, its ${input:...} answered with the token as VS Code's prompt would.
    vscode = json.loads(copied(page, "Copy the VS Code config"))
    (prompt,) = vscode["inputs"]
    server = vscode["servers"]["skill-registry"]
    answer = {key: value.replace(f"${{input:{prompt['id']}}}", token) for key, value in server["headers"].items()}
    assert prompt["password"] is True and server["type"] == "http"
    assert mcp_resources(server["url"], answer, handshake=True) == SERVED
    desktop = json.loads(copied(page, "Copy the Claude Desktop config"))["mcpServers"]["skill-registry"]
    assert desktop["args"][2] == f"{live_server.url}/mcp" and desktop["command"] == "npx"

    # The curl line.
    curl = run_shell(copied(page, "Copy the curl line"), token)
    assert curl.returncode == 0, curl.stderr
    assert [skill["name"] for skill in json.loads(curl.stdout)["results"]] == ["code-review", "draft-only"]

    # The Python example, in the venv that has the client installed, with the page's variables.
    setup = copied(page, "Copy the install lines")
    assert f"export SKILL_REGISTRY_URL={live_server.url} " in setup
    example = copied(page, "Copy the Python example")
    ran = subprocess.run(
        [sys.executable, "-c", example],
        env={**os.environ, "SKILL_REGISTRY_URL": live_server.url, "SKILL_REGISTRY_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ast.literal_eval(ran.stdout.strip())[0] == "code-review"  # the skill the query is about first

    # npx skills add: on, with the number of skills the index lists.
    expect(page.locator("#connect-npx")).to_contain_text("labelled production: 1 skill now")
    npx = copied(page, "Copy the npx skills add line")
    assert npx == f"npx skills add {live_server.url}"
    if NODE.exists() and SKILLS_CLI.exists():  # installed by .ci/node-tools, as test_discovery_cli.py needs
        listed = subprocess.run(
            [str(NODE), str(SKILLS_CLI), *npx.split()[2:], "--list"],
            cwd=tmp_path,
            env={"PATH": f"{NODE.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "DO_NOT_TRACK": "1", "CI": "1"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        assert "code-review" in listed.stdout and "draft-only" not in listed.stdout
    page.context.close()


@pytest.mark.parametrize("role", ["author", "analyst"])
def test_the_connect_page_for_authors_and_analysts(live_server, open_page, settings, role):
    settings.DISCOVERY_LABEL = None
    user_with_role("someone", role)
    page = open_page("someone")

    page.goto(f"{live_server.url}/connect/")

    npx = page.locator("#connect-npx")
    expect(npx).to_contain_text("The discovery index is off")
    expect(npx.locator("#discovery-setting")).to_have_text("DISCOVERY_LABEL=production")
    token_links = page.get_by_role("link", name=re.compile("^Create one with"))
    if role == "author":
        expect(token_links.first).to_be_visible()
    else:  # analysts do not create tokens: the page says whom to ask
        expect(token_links).to_have_count(0)
        expect(page.locator("#token-note")).to_contain_text("ask an admin for a token")
    screenshot(page, f"connect-{role}")


def test_the_page_is_linked_from_every_roles_navigation(live_server, open_page):
    user_with_role("ada", "analyst")
    page = open_page("ada")
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="Connect").click()
    expect(nav.get_by_role("link", name="Connect")).to_have_attribute("aria-current", "page")
    assert page.url == f"{live_server.url}/connect/"
