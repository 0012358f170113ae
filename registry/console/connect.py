"""The Connect page: how each kind of consumer reaches this registry, with this server's own URLs
filled in: an MCP host (Claude Code, Claude Desktop, VS Code), `npx skills add` (the discovery
index, when DISCOVERY_LABEL is set), the Python client and `curl`. Every line has a copy button
(static/js/console.js), and the token each needs is one click away with its scopes ticked."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import render
from django.urls import path, reverse

from registry.console.access import console_view
from registry.models import TokenScope
from registry.roles import ANY_ROLE, token_access
from registry.selectors.discovery import discovery_index

SERVER_NAME = "skill-registry"
TOKEN_VARIABLE = "SKILL_REGISTRY_TOKEN"


@dataclass(frozen=True)
class TokenNeed:
    """A token for one kind of consumer: its suggested name and scopes, and the link that opens the
    token form with them filled in."""

    name: str
    scopes: list[str]
    href: str


def token_need(name: str, *scopes: TokenScope) -> TokenNeed:
    values = [scope.value for scope in scopes]
    query = urlencode([("name", name), *(("scopes", value) for value in values)])
    return TokenNeed(name=name, scopes=values, href=f"{reverse('token-list')}?{query}#new-token")


def mcp_configs(endpoint: str) -> dict[str, str]:
    """A host's configuration for `endpoint`, as each host spells it; the token stays out of the
    text (an environment variable or a prompt), so what is copied can be committed."""
    bearer = f"Bearer ${{{TOKEN_VARIABLE}}}"  # Claude Code expands ${VAR} in .mcp.json
    # In double quotes, so the shell puts the token in as the server is added.
    claude_code = (
        f"claude mcp add --transport http {SERVER_NAME} {shlex.quote(endpoint)} "
        f'--header "Authorization: Bearer ${TOKEN_VARIABLE}"'
    )
    project_json = {
        "mcpServers": {SERVER_NAME: {"type": "http", "url": endpoint, "headers": {"Authorization": bearer}}}
    }
    vscode = {
        "inputs": [
            {
                "type": "promptString",
                "id": TOKEN_VARIABLE.lower(),
                "description": "Skill Registry token",
                "password": True,
            }
        ],
        "servers": {
            SERVER_NAME: {
                "type": "http",
                "url": endpoint,
                "headers": {"Authorization": f"Bearer ${{input:{TOKEN_VARIABLE.lower()}}}"},
            }
        },
    }
    # Claude Desktop's config file starts local (stdio) servers only: `mcp-remote` bridges it to
    # an HTTP endpoint. The header's value comes from `env`, without a space after the colon, as
    # mcp-remote's README advises (some hosts split arguments on spaces).
    desktop = {
        "mcpServers": {
            SERVER_NAME: {
                "command": "npx",
                "args": ["-y", "mcp-remote", endpoint, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": "Bearer YOUR-TOKEN"},
            }
        }
    }
    return {
        "claude_code": claude_code,
        "project_json": json.dumps(project_json, indent=2, ensure_ascii=False),
        "vscode_json": json.dumps(vscode, indent=2, ensure_ascii=False),
        "desktop_json": json.dumps(desktop, indent=2, ensure_ascii=False),
    }


@console_view(scope=ANY_ROLE)
def connect(request):
    base = request.build_absolute_uri("/").rstrip("/")
    endpoint = base + reverse("mcp")
    label = settings.DISCOVERY_LABEL
    context = {
        "base": base,
        "endpoint": endpoint,
        "token_variable": TOKEN_VARIABLE,
        "mcp": mcp_configs(endpoint),
        "discovery_label": label,
        "discovery_count": len(discovery_index(label=label)) if label else 0,
        "index_url": base + reverse("discovery-index"),
        "curl": f'curl -H "Authorization: Bearer ${TOKEN_VARIABLE}" {base}/api/v1/skills',
        "tokens": {
            "mcp": token_need("mcp-host", TokenScope.SKILLS_READ),
            "client": token_need("python-client", TokenScope.SKILLS_READ, TokenScope.USAGE_WRITE),
            "push": token_need("skillreg-push", TokenScope.SKILLS_READ, TokenScope.SKILLS_WRITE),
        },
        "token_access": token_access(request.user),
    }
    return render(request, "registry/connect.html", context)


urlpatterns = [
    path("connect/", connect, name="connect"),
]
