"""Form text the console hands to services: only what PostgreSQL can store, JSON read as the API
reads it. A form posts raw text, past the API's safe JSON parser; without these checks a NUL in
an instruction or deep nesting in a JSON box would be a 500 instead of a message."""

from __future__ import annotations

import io
from typing import Any

from rest_framework.exceptions import ParseError

from registry.api.base import SafeJSONParser
from registry.errors import ApplicationError


def text_problem(text: str, *, what: str) -> str | None:
    """Why PostgreSQL could not store a form's text (a NUL character), or None."""
    return f"The {what} contains a NUL character." if "\x00" in text else None


def json_from_text(text: str, *, field: str, what: str) -> Any:
    """The API's JSON rules for a form's JSON box: strict JSON, no NUL or lone surrogates, no
    nesting past JSON_MAX_DEPTH."""
    try:
        return SafeJSONParser().parse(io.BytesIO(text.encode("utf-8", "surrogatepass")))
    except ParseError as exc:
        detail = str(exc.detail).replace("The JSON body", f"The {what}").replace("body", what)
        raise ApplicationError(detail, fields={field: "not valid JSON"}) from None
