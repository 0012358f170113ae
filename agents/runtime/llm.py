"""A thin wrapper over litellm: one call in, plain data out, two error classes.

litellm itself is reached through `litellm_module()` (imported once, on first use).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from agents.runtime.litellm_import import litellm_module
from agents.runtime.providers import register_providers

# The API's "model": "scripted" / "offline" must work, but litellm needs "provider/model".
MODEL_ALIASES = {"scripted": "scripted/default", "offline": "offline/default"}
ERROR_MESSAGE_LIMIT = 500
# A hung connection must not hold a worker until Celery's hard limit; a timeout is transient.
DEFAULT_TIMEOUT_SECONDS = 120.0


class LLMError(Exception):
    """The model call failed in a way that retrying will not fix (bad request, auth, ...)."""


class TransientLLMError(LLMError):
    """Rate limit, timeout, connection failure or a 5xx: worth retrying with backoff."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] | str  # a str when the model sent arguments that are not a JSON object


@dataclass(frozen=True)
class LLMResponse:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_ms: int = 0


def resolve_model(model: str) -> str:
    return MODEL_ALIASES.get(model, model)


def provider_of(model: str) -> str | None:
    """The provider litellm sends `model` to (`openai` for `gpt-4o` too), or None when it knows none."""
    litellm = litellm_module()
    register_providers()
    try:
        return str(litellm.get_llm_provider(resolve_model(model))[1])
    except Exception:  # litellm raises its BadRequestError for a model it cannot place
        return None


def complete(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **options: Any) -> LLMResponse:
    """One chat completion through litellm; raises TransientLLMError or LLMError."""
    litellm = litellm_module()
    register_providers()
    started = time.monotonic()
    try:
        response = litellm.completion(
            model=resolve_model(model),
            messages=messages,
            tools=tools or None,
            **{"timeout": DEFAULT_TIMEOUT_SECONDS, **options},
        )
    except Exception as error:  # litellm maps provider errors onto its own classes
        raise _map_error(litellm, model, error) from error
    latency_ms = int((time.monotonic() - started) * 1000)
    return _to_llm_response(litellm, response, latency_ms)


def token_count(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    litellm = litellm_module()
    try:
        return int(litellm.token_counter(model=resolve_model(model), messages=messages, tools=tools or None))
    except Exception:  # an exotic message shape must not stop the turn: fall back to ~4 chars/token
        return len(json.dumps(messages, default=str)) // 4 + len(json.dumps(tools)) // 4


class CachingTokenCounter:
    """Counts messages + tools like `token_count`, remembering each message's share.

    Every step re-sends the system prompt and the conversation so far; tokenising all of it
    again was most of the runtime's own cost per step. Counting message by message overstates
    the total by a few tokens of per-call priming per message, which only makes trimming start
    slightly early.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self._messages: dict[str, int] = {}

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return self._tools_share(tools) + sum(self._message_share(message) for message in messages)

    def upper_bound(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        """Never less than the count, and no tokenising: a tokenizer makes at most one token per
        UTF-8 byte of a text, plus the few it adds around a message; json.dumps writes each
        non-ASCII character as at least as many characters as it has UTF-8 bytes, and adds keys
        and quotes on top. A turn far below its model's limit (the usual case) is then never
        tokenised, which was most of the runtime's own work per step."""
        return self._tools_share(tools) + sum(
            len(json.dumps(message, default=str)) + MESSAGE_TOKENS_BOUND for message in messages
        )

    def _message_share(self, message: dict[str, Any]) -> int:
        key = json.dumps(message, sort_keys=True, default=str)
        if key not in self._messages:
            self._messages[key] = token_count(self.model, [message], [])
        return self._messages[key]

    def _tools_share(self, tools: list[dict[str, Any]]) -> int:
        if not tools:
            return 0
        key = (self.model, json.dumps(tools, sort_keys=True, default=str))
        if key not in _TOOL_SHARES:
            if len(_TOOL_SHARES) >= MAX_TOOL_SHARES:
                _TOOL_SHARES.clear()
            probe = [{"role": "user", "content": ""}]
            _TOOL_SHARES[key] = max(0, token_count(self.model, probe, tools) - token_count(self.model, probe, []))
        return _TOOL_SHARES[key]


MESSAGE_TOKENS_BOUND = 8  # litellm adds 3-4 tokens per message and 3 per call
# The tools' share per model and tool set, for the whole process: every turn offers one of a few
# tool sets (all tools, or a forced skill's), and counting them each time is two tokenizer runs per turn.
MAX_TOOL_SHARES = 1024
_TOOL_SHARES: dict[tuple[str, str], int] = {}


def max_input_tokens(model: str) -> int | None:
    litellm = litellm_module()
    try:
        info = litellm.get_model_info(resolve_model(model))
    except Exception:  # unmapped models (custom providers, local servers) have no info
        return None
    limit = info.get("max_input_tokens") or info.get("max_tokens")
    return int(limit) if limit else None


def warm_up(models: Iterable[str]) -> None:
    """Pay now for what a process's first turn would otherwise pay: litellm's import and, the
    larger part, the tokenizers behind token counting (tiktoken decodes its BPE tables on first
    use, 1-2 s each) and the model map. Starts no thread, so a process may fork afterwards (the
    Celery pool does) and its children share all of it."""
    probe = [{"role": "user", "content": "warm up"}]
    for model in models:
        token_count(model, probe, [])
        max_input_tokens(model)


def _to_llm_response(litellm: ModuleType, response: Any, latency_ms: int) -> LLMResponse:
    message = response.choices[0].message
    usage = getattr(response, "usage", None)
    return LLMResponse(
        content=message.content,
        tool_calls=[_to_tool_call(call) for call in (message.tool_calls or [])],
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost=_cost(litellm, response),
        latency_ms=latency_ms,
    )


def _to_tool_call(call: Any) -> ToolCall:
    raw = call.function.arguments
    arguments: dict[str, Any] | str
    if isinstance(raw, dict):
        arguments = raw
    elif raw is None or not raw.strip():
        arguments = {}  # some providers send "" for a call without arguments
    else:
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        # seed 001: unparseable arguments go to error recovery as the raw text
        arguments = parsed if isinstance(parsed, dict) else raw
    return ToolCall(id=call.id, name=call.function.name or "", arguments=arguments)


def _cost(litellm: ModuleType, response: Any) -> float:
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:
        return float(hidden["response_cost"])
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # models without prices (local, custom) cost nothing we can know
        return 0.0


def _map_error(litellm: ModuleType, model: str, error: Exception) -> LLMError:
    transient = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
    )
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    message = f"{model}: {kind}: {_first_line(error)}"
    if isinstance(error, transient) or (isinstance(status, int) and (status == 429 or status >= 500)):
        return TransientLLMError(message)
    return LLMError(message)


def _first_line(error: Exception) -> str:
    text = str(getattr(error, "message", None) or error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line[:ERROR_MESSAGE_LIMIT]
