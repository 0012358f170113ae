"""HTTP over urllib: one request, its status, headers and body; failures to reach the registry
become `RegistryUnavailable`, error answers the matching `RegistryError`."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from urllib.parse import quote, urlencode

from skill_registry_client.errors import NotFound, RegistryError, RegistryUnavailable, VersionConflict

USER_AGENT = "skill-registry-client/0.1"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes

    def json(self):
        return json.loads(self.body)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A redirect would resend the bearer token to wherever it points.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Transport:
    def __init__(self, base_url: str, token: str, *, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect)

    def url(self, path: str, params: dict | None = None) -> str:
        query = {key: value for key, value in (params or {}).items() if value is not None}
        if path.startswith("/"):  # from the site's root (`/.well-known/...`), not the API's
            return f"{self.base_url}{path}" + (f"?{urlencode(query)}" if query else "")
        return f"{self.base_url}/api/v1/{path}" + (f"?{urlencode(query)}" if query else "")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        json_body: object = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """The answer for a 2xx or 304; raises for anything else."""
        sent = {"Authorization": f"Bearer {self.token}", "User-Agent": USER_AGENT, **(headers or {})}
        data = None
        if json_body is not None:
            data = json.dumps(json_body).encode("utf-8")
            sent["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url(path, params), data=data, method=method, headers=sent)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return Answer(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            answer = Answer(error.code, error.headers, error.read())
            if error.code == 304:
                return answer
            raise _error_for(answer, f"{method} {path}") from None
        except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, resets are OSErrors
            reason = getattr(error, "reason", error)
            raise RegistryUnavailable(f"The registry at {self.base_url} cannot be reached: {reason}.") from None


def skill_path(name: str, *rest: str) -> str:
    return "/".join(["skills", quote(name, safe=""), *(quote(part, safe="/") for part in rest)])


def _error_for(answer: Answer, what: str) -> RegistryError:
    try:
        body = answer.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = str(body.get("detail") or answer.body[:300].decode("utf-8", "replace") or f"HTTP {answer.status}")
    kind: type[RegistryError] = RegistryError
    if answer.status >= 500 or answer.status == 429:
        kind = RegistryUnavailable  # a last good answer is better than none while it recovers
    elif answer.status == 404:
        kind = NotFound
    elif answer.status == 409:
        kind = VersionConflict
    return kind(f"{what}: {answer.status} {detail}", status=answer.status, code=str(body.get("error", "")), body=body)
