"""What a litellm model string may contain before a turn hands it to litellm.

A model string names a model, never a place: litellm posts to a URL given as the model (its
oobabooga and huggingface providers call `model` itself when it starts with http:// or
https://), so a string that embeds a URL is refused even when AGENT_MODELS lists it. Where a
model is served comes from AGENT_API_BASE or litellm's own provider settings, never from the
string. No Django here: agents/checks.py refuses such a list at start-up with it, and
`agents.turns.services.agent_model_check` refuses it again per request.
"""

from __future__ import annotations

import unicodedata

# litellm's aliases for its two built-in providers (agents/runtime/llm.py resolves them).
SCRIPTED = "scripted"
OFFLINE = "offline"


def model_string_problem(model: str) -> str | None:
    """Why `model` may not go to litellm, or None when it may."""
    if not model:
        return "it is empty"
    if "://" in model or any(part.lower().startswith(("http:", "https:")) for part in model.split("/")):
        return "it embeds a URL; where a model is served comes from AGENT_API_BASE, never from its name"
    if any(char.isspace() or unicodedata.category(char)[0] == "C" for char in model):
        return "it contains whitespace or control characters"
    return None
