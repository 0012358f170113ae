"""What the client raises. Every error is a `RegistryError`, so one `except` catches them all."""

from __future__ import annotations


class RegistryError(Exception):
    """The registry refused a request (`status` is its HTTP status, `code` and `detail` its JSON
    error), or the client could not do what was asked."""

    def __init__(self, detail: str, *, status: int | None = None, code: str = "", body: dict | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.body = body or {}


class RegistryUnavailable(RegistryError):
    """The registry could not be reached (connection refused, timeout, 5xx) and nothing was cached
    for the request, so there is no last good answer to serve."""


class NotFound(RegistryError):
    """404: no such skill, version, label or file."""


class VersionConflict(RegistryError):
    """409: the skill moved on since `base_version`; `latest_version` is where it is now."""

    @property
    def latest_version(self) -> int | None:
        return self.body.get("latest_version")


class ContentMismatch(RegistryError):
    """`pull --frozen`: the registry's content of a skill differs from the lockfile's."""

    def __init__(self, detail: str, *, skill: str) -> None:
        super().__init__(detail)
        self.skill = skill
