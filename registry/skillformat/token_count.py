"""Token counts for skill descriptions and bodies, without importing litellm in the web process.

litellm ships tiktoken's encoding files; pointing tiktoken at that folder counts tokens offline
while keeping litellm's ~3 s import out of request handling.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path


@cache
def _encoding():
    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        bundled = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    import tiktoken  # heavy: only the processes that count tokens pay for it

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    if not text:
        return 0
    # disallowed_special=() : skill text may legitimately contain "<|endoftext|>"-like strings.
    return len(_encoding().encode(text, disallowed_special=()))
