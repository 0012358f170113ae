"""Form text the console hands to services: only what PostgreSQL can store, JSON read as the API
reads it. A form posts raw text, past the API's safe JSON parser; without these checks a NUL in
an instruction or deep nesting in a JSON box would be a 500 instead of a message."""

from __future__ import annotations

import io
import re
import uuid
from typing import Any

from rest_framework.exceptions import ParseError

from registry.api.base import SafeJSONParser
from registry.errors import ApplicationError

_WHOLE_NUMBER = re.compile(r"\s*[-+]?\d+\s*")  # what int() reads, and nothing it would refuse
_DECIMAL = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")  # what float() reads, but no nan/inf


def whole_number(text: str) -> int | None:
    """A form's or query's whole number, or None when the text is not one."""
    return int(text) if _WHOLE_NUMBER.fullmatch(text) else None


def form_number(text: str, *, field: str, whole: bool = False) -> float | int | None:
    """A form's number (blank: None), or a domain error naming the field; the service judges its range."""
    if not text.strip():
        return None
    if not (_WHOLE_NUMBER if whole else _DECIMAL).fullmatch(text):
        raise ApplicationError(f"{field} must be a {'whole ' if whole else ''}number.", fields={field: "a number"})
    return int(text) if whole else float(text)


def uuid_or_none(text: str) -> uuid.UUID | None:
    """A turn's or conversation's id as typed in a form or a URL, or None when it is not one."""
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def text_problem(text: str, *, what: str) -> str | None:
    """Why PostgreSQL could not store a form's text (a NUL character), or None."""
    return f"The {what} contains a NUL character." if "\x00" in text else None


def json_from_text(text: str, *, field: str, what: str) -> Any:
    """The API's JSON rules for a form's JSON box: strict JSON, no NUL or lone surrogates, no
    nesting past JSON_MAX_DEPTH."""
    return json_from_bytes(text.encode("utf-8", "surrogatepass"), field=field, what=what)


def json_from_bytes(data: bytes, *, field: str, what: str) -> Any:
    """An uploaded JSON file under the same rules (UTF-8 text, as the API reads a body)."""
    try:
        return SafeJSONParser().parse(io.BytesIO(data))
    except ParseError as exc:
        detail = str(exc.detail).replace("The JSON body", f"The {what}").replace("body", what)
        raise ApplicationError(detail, fields={field: "not valid JSON"}) from None
