"""Domain errors raised by services and turned into responses in one place.

Each error carries an HTTP status and a machine-readable code, so the DRF exception handler
and the console helper never need to know about individual error classes.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    status = 400
    code = "invalid"

    def __init__(
        self,
        detail: str,
        *,
        line: int | None = None,
        fields: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.line = line
        self.fields = fields or {}
        self.extra = extra or {}

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "detail": self.detail}
        if self.line is not None:
            body["line"] = self.line
        if self.fields:
            body["fields"] = self.fields
        body.update(self.extra)
        return body

    def headers(self) -> dict[str, str]:
        """HTTP headers the response carries beside the body (none by default)."""
        return {}


class InvalidSkill(ApplicationError):
    """A SKILL.md that cannot be accepted (unreadable, missing name/description, too big)."""

    code = "invalid_skill"


class LenientReadingRefused(InvalidSkill):
    """A SKILL.md that publishes only if its author accepts how a field that is not valid YAML
    was read (as text); `extra["read_as"]` is the frontmatter as it would be stored."""

    code = "lenient_reading"


class InvalidBundle(ApplicationError):
    """A skill folder or zip that is unsafe or malformed (zip-slip, links, absolute paths)."""

    code = "invalid_bundle"


class BundleTooLarge(ApplicationError):
    status = 413
    code = "bundle_too_large"


class NotFound(ApplicationError):
    status = 404
    code = "not_found"


class Conflict(ApplicationError):
    """The request is well formed but clashes with the current state (a name already taken)."""

    status = 409
    code = "conflict"


class VersionConflict(Conflict):
    code = "version_conflict"


class NameTaken(Conflict):
    """Creating a skill whose name its source already has: a new version of that skill is
    published on top of the version its author read, never by creating it again."""

    code = "name_taken"


class RequirementCycle(Conflict):
    """A SKILL.md whose `metadata.requires` leads back to the skill itself; `extra["cycles"]`
    says each cycle (its path `a → b → a` and the label it forms at)."""

    code = "requirement_cycle"


class InvalidPattern(ApplicationError):
    code = "invalid_pattern"


class PermissionDenied(ApplicationError):
    status = 403
    code = "forbidden"


class LimitReached(ApplicationError):
    """A configured limit is reached for now: 429 naming the setting, and how many seconds to wait
    before trying again (the Retry-After header)."""

    status = 429
    code = "limit_reached"

    def __init__(self, detail: str, *, setting: str, retry_after: int, fields: dict[str, Any] | None = None) -> None:
        super().__init__(detail, fields=fields, extra={"setting": setting, "retry_after": retry_after})
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
