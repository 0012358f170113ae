"""The two built-in litellm custom providers (SPEC §6.9): `scripted` and `offline`.

Both are stateless: everything they need is in the messages (and, for scripted, the script in
the call's options), so a retried call gives the same answer. The decision logic is plain
functions; the litellm classes around them are built on first registration, because importing
litellm is expensive and must stay lazy.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from agents.runtime.litellm_import import litellm_module
from agents.runtime.skill_tools import FILES_HEADING

SCRIPT_DONE_ANSWER = "done"
OFFLINE_NOTE = (
    "_Offline demo model: it matches your request to a skill and lists the skill's steps, but does no "
    "real reasoning. Set AGENT_MODEL to a litellm model (for example `openai/gpt-4o-mini`, with its "
    "API key) to get real answers._"
)
# The built-in providers report usage as this model's tokenizer counts it (they have none of their own).
USAGE_TOKENIZER_MODEL = "gpt-4o"
MAX_SUMMARY_STEPS = 8
MAX_STEP_CHARS = 160
STOPWORDS = frozenset(
    "the and for with that this from into your you are can use using how what when where which who "
    "why will would should could about please help want need make some any all its not but have has".split()
)


class ScriptError(ValueError):
    """The script given to the scripted model is malformed."""


@dataclass(frozen=True)
class ProviderReply:
    content: str | None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)  # (name, arguments)


def _turn_messages(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The last user message's text and the messages after it."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    query = messages[last_user].get("content") if last_user >= 0 else ""
    return (query if isinstance(query, str) else ""), messages[last_user + 1 :]


# --- scripted -------------------------------------------------------------------------------


SCRIPTED_CALL_ID = re.compile(r"call_scripted_(\d+)_")


def scripted_reply(messages: list[dict[str, Any]], script: Any) -> tuple[int, ProviderReply]:
    """The script step for this call, worked out from the messages alone so that a retry of the
    same call replays the same step: the number of assistant messages since the last user
    message. Context trimming may have dropped earlier exchanges of this turn, so the step
    stamped into the ids of the tool calls still present (`call_scripted_<step>_<n>`) counts too."""
    if not isinstance(script, list):
        raise ScriptError("the script must be a list of steps")
    _, after = _turn_messages(messages)
    index = sum(1 for message in after if message.get("role") == "assistant")
    for message in after:
        ids = [message.get("tool_call_id")] + [call.get("id") for call in message.get("tool_calls") or []]
        for call_id in ids:
            stamped = SCRIPTED_CALL_ID.match(call_id or "")
            if stamped:
                index = max(index, int(stamped.group(1)) + 1)
    if index >= len(script):
        return index, ProviderReply(SCRIPT_DONE_ANSWER)
    return index, _parse_step(index, script[index])


def _parse_step(index: int, step: Any) -> ProviderReply:
    if not isinstance(step, dict):
        raise ScriptError(f"script step {index} must be an object with 'content' and/or 'tool_calls'")
    content = step.get("content")
    if content is not None and not isinstance(content, str):
        raise ScriptError(f"script step {index}: 'content' must be a string or null")
    calls = step.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ScriptError(f"script step {index}: 'tool_calls' must be a list")
    parsed: list[tuple[str, dict[str, Any] | str]] = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"script step {index}: each tool call needs a 'name' string")
        arguments = call.get("arguments", {})
        # A string is sent as-is, so a script can reproduce a model that emits broken JSON.
        if not isinstance(arguments, (dict, str)):
            raise ScriptError(f"script step {index}: 'arguments' must be an object or a string")
        parsed.append((call["name"], arguments))
    return ProviderReply(content, parsed)


# --- offline --------------------------------------------------------------------------------

AVAILABLE_SKILL = re.compile(r"<skill>\s*<name>(.*?)</name>(?:\s*<description>(.*?)</description>)?", re.DOTALL)
MANDATORY_SKILL = re.compile(r'<mandatory-skill name="([^"]*)"[^>]*>(.*?)</mandatory-skill>', re.DOTALL)


def offline_reply(messages: list[dict[str, Any]], tool_names: list[str]) -> ProviderReply:
    """Pick the best listed skill for the request, read it, then summarise its steps."""
    system = "\n\n".join(
        m["content"] for m in messages if m.get("role") == "system" and isinstance(m.get("content"), str)
    )
    query, after = _turn_messages(messages)
    if after and after[-1].get("role") == "tool":
        return _answer_from_tool_result(after)
    mandatory = MANDATORY_SKILL.search(system)
    if mandatory:  # a forced skill: read_skill is not offered, the instructions are already here
        return ProviderReply(_skill_answer(mandatory.group(1), mandatory.group(2)))
    skills = [
        (html.unescape(name.strip()), html.unescape(description or ""))
        for name, description in AVAILABLE_SKILL.findall(system)
    ]
    best = best_skill(query, skills)
    if best and "read_skill" in tool_names:
        return ProviderReply(None, [("read_skill", {"skill_name": best})])
    return ProviderReply(
        f"{OFFLINE_NOTE}\n\nNone of the available skills matches your request, so I have no steps to "
        "suggest. Ask about a task one of the listed skills covers, or configure a real model."
    )


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) >= 3 and word not in STOPWORDS}


def best_skill(query: str, skills: list[tuple[str, str]]) -> str | None:
    """The skill sharing most words with the query; name words count double. None if no overlap."""
    query_words = _words(query)
    scored = [
        (
            2 * len(query_words & _words(name.replace("-", " ").replace("_", " ")))
            + len(query_words & _words(description)),
            name,
        )
        for name, description in skills
    ]
    score, name = max(scored, key=lambda pair: pair[0], default=(0, ""))
    return name if score > 0 else None


def _answer_from_tool_result(after: list[dict[str, Any]]) -> ProviderReply:
    result = after[-1]
    content = result["content"] if isinstance(result.get("content"), str) else ""
    calls = {call["id"]: call["function"] for m in after for call in (m.get("tool_calls") or [])}
    function = calls.get(result.get("tool_call_id"), {})
    name = function.get("name", "tool")
    if content.startswith(f"Tool call to {name} failed"):
        return ProviderReply(f"{OFFLINE_NOTE}\n\nThe {name} tool failed, so I cannot go on:\n\n{content[:500]}")
    if name in ("read_skill", "use_skill"):
        skill = json.loads(function.get("arguments") or "{}").get("skill_name", "the")
        body = content.split(f"\n{FILES_HEADING}")[0]
        return ProviderReply(_skill_answer(skill, body))
    return ProviderReply(f"{OFFLINE_NOTE}\n\nThe {name} tool returned:\n\n{content[:500]}")


def _skill_answer(skill_name: str, body: str) -> str:
    steps = summary_steps(body)
    listed = "\n".join(f"{number}. {step}" for number, step in enumerate(steps, start=1))
    listed = listed or "(the skill lists no steps)"
    return f"{OFFLINE_NOTE}\n\nI would follow the **{skill_name}** skill. Its steps:\n\n{listed}"


def summary_steps(body: str) -> list[str]:
    """The skill's steps: numbered headings ("## 1. Scope"), else numbered lines, else headings,
    else bullets; wrapped list items are joined, code blocks skipped."""
    kinds: dict[str, list[str]] = {"numbered_headings": [], "numbered": [], "headings": [], "bullets": []}
    current: list[str] | None = None  # the list whose last item an indented line continues
    in_code = False
    for line in body.splitlines():
        if line.strip().startswith("```"):
            in_code, current = not in_code, None
        elif in_code:
            continue
        elif heading := re.match(r"#{2,3}\s+(.+)", line):
            step = re.match(r"\d+[.)]\s+(.+)", heading.group(1))
            kinds["numbered_headings" if step else "headings"].append((step or heading).group(1))
            current = None
        elif item := re.match(r"\s*\d+[.)]\s+(.+)", line):
            current = kinds["numbered"]
            current.append(item.group(1))
        elif item := re.match(r"\s*[-*]\s+(.+)", line):
            current = kinds["bullets"]
            current.append(item.group(1))
        elif current is not None and line[:1].isspace() and line.strip():
            current[-1] += " " + line.strip()
        else:
            current = None
    found = [steps for steps in kinds.values() if steps]
    chosen = next((steps for steps in found if len(steps) >= 2), found[0] if found else [])
    return [_clip(step) for step in chosen[:MAX_SUMMARY_STEPS]]


def _clip(text: str) -> str:
    """The first sentence, at most MAX_STEP_CHARS long."""
    text = " ".join(text.replace("**", "").split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return sentence if len(sentence) <= MAX_STEP_CHARS else sentence[: MAX_STEP_CHARS - 1] + "…"


# --- litellm glue ---------------------------------------------------------------------------


def register_providers() -> None:
    """Make "scripted/..." and "offline/..." models known to litellm (idempotent)."""
    litellm = litellm_module()
    handlers = _handlers()
    registered = {entry.get("provider"): entry.get("custom_handler") for entry in litellm.custom_provider_map}
    if all(registered.get(provider) is handler for provider, handler in handlers.items()):
        return
    others = [entry for entry in litellm.custom_provider_map if entry.get("provider") not in handlers]
    ours = [{"provider": provider, "custom_handler": handler} for provider, handler in handlers.items()]
    litellm.custom_provider_map[:] = others + ours


@cache
def _handlers() -> dict[str, Any]:
    litellm = litellm_module()
    # heavy: litellm's classes are imported with litellm itself, on first use
    from litellm.llms.custom_llm import CustomLLM, CustomLLMError
    from litellm.types.utils import Choices, Message, Usage

    def respond(
        model_response: Any, provider: str, model: str, messages: list[Any], reply: ProviderReply, prefix: str
    ) -> Any:
        tool_calls = [
            {
                "id": f"call_{prefix}_{number}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for number, (name, arguments) in enumerate(reply.tool_calls)
        ]
        message = Message(content=reply.content, role="assistant", tool_calls=tool_calls or None)
        model_response.choices = [
            Choices(finish_reason="tool_calls" if tool_calls else "stop", index=0, message=message)
        ]
        model_response.model = f"{provider}/{model}"
        prompt_tokens = litellm.token_counter(model=USAGE_TOKENIZER_MODEL, messages=messages)
        completion_tokens = litellm.token_counter(
            model=USAGE_TOKENIZER_MODEL, text=(reply.content or "") + json.dumps(tool_calls)
        )
        model_response.usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        return model_response

    class ScriptedLLM(CustomLLM):
        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            # litellm hands unknown completion kwargs (our "script") to custom providers in optional_params.
            options = kwargs.get("optional_params") or {}
            try:
                index, reply = scripted_reply(messages, options.get("script", []))
            except ScriptError as error:
                raise CustomLLMError(status_code=400, message=str(error)) from error
            return respond(kwargs["model_response"], "scripted", model, messages, reply, f"scripted_{index}")

    class OfflineLLM(CustomLLM):
        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            options = kwargs.get("optional_params") or {}
            tool_names = [tool["function"]["name"] for tool in options.get("tools") or []]
            reply = offline_reply(messages, tool_names)
            step = sum(1 for m in messages if m.get("role") == "assistant")
            return respond(kwargs["model_response"], "offline", model, messages, reply, f"offline_{step}")

    return {"scripted": ScriptedLLM(), "offline": OfflineLLM()}
