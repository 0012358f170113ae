"""The playground (SPEC §7): send a message to a model and watch the turn's trace arrive.

A turn is queued through `agents.turns.services.agent_turn_create`, the service behind
`POST /api/v1/agent/turns`, and a Celery worker runs it; this page never runs one. The turn panel
polls for trace events after the last one it shows and appends them (an open event stays open),
and the poll that sees the turn finished answers 286, which stops htmx polling. Without
JavaScript the page refreshes itself while the turn runs.

It lives in the agents app, which depends on the registry and not the other way round, and uses
the console's shell and access rules; the scopes are the turn API's: `agent:run` to send and to
read turns, so an analyst sees the page but neither runs nor reads turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import urlencode

from agents.model_strings import OFFLINE, SCRIPTED
from agents.models import AgentTurn, TraceEvent, TurnOrigin
from agents.runtime.forcing import forced_skill_and_query
from agents.turns import selectors as turn_selectors
from agents.turns import services as turns
from agents.turns.selectors import TurnReader
from registry.console.access import console_view, user_scopes
from registry.console.errors import flash_back, on_domain_error
from registry.console.inputs import json_from_text, text_problem, uuid_or_none, whole_number
from registry.errors import ApplicationError
from registry.selectors.resolve import registry_snapshot
from registry.selectors.versions import label_names_in_use, skill_version_numbers
from registry.skillformat.rendering import render_markdown

RUN = "agent:run"
POLL_EVERY = "700ms"
COMPARED_SLOT = "b"  # the right-hand panel of a side-by-side run
MAX_SEQ = 2**31 - 1  # a trace event's seq is a PostgreSQL integer: a larger `after` would not compare
SCRIPT_EXAMPLE = json.dumps(
    [{"content": None, "tool_calls": [{"name": "read_skill", "arguments": {"skill_name": "…"}}]}, {"content": "Done."}],
    indent=1,
    ensure_ascii=False,
)
# Keys shown first in an event's details; the rest follow in the order the runtime wrote them.
_FIRST_KEYS = ("step", "model", "tool", "skill", "name", "ok", "error", "why", "message")
_LAST_KEYS = ("system_prompt",)
_MODEL_NOTES = {OFFLINE: "demo model, no network", SCRIPTED: "steps from the script box"}


def model_choices() -> list[tuple[str, str]]:
    """The models a turn may ask for here: those the turn service accepts
    (`agent_models_allowed`, from AGENT_MODELS), AGENT_MODEL first."""
    allowed = sorted(turns.agent_models_allowed(), key=lambda model: model != settings.AGENT_MODEL)
    return [(model, _model_title(model)) for model in allowed]


def _model_title(model: str) -> str:
    if model in _MODEL_NOTES:
        return f"{model} · {_MODEL_NOTES[model]}"
    return f"{model} · AGENT_MODEL" if model == settings.AGENT_MODEL else model


@dataclass
class SendInput:
    message: str = ""
    model: str = ""
    forced_skill: str = ""
    conversation: str = ""
    script: str = ""
    label: str = ""
    version: str = ""  # the forced skill's version (blank: what the label resolves to)
    compare_version: str = ""  # when given, a second turn runs the forced skill at this version

    @classmethod
    def from_post(cls, post) -> SendInput:
        return cls(
            message=post.get("message", ""),
            model=post.get("model", "").strip(),
            forced_skill=post.get("forced_skill", "").strip().lstrip("/"),
            conversation=post.get("conversation", "").strip(),
            script=post.get("script", "").strip(),
            label=post.get("label", "").strip(),
            version=post.get("version", "").strip(),
            compare_version=post.get("compare_version", "").strip(),
        )

    @property
    def pinned_skill(self) -> str | None:
        """The skill a version applies to: the forced one, by field or leading `/name`, as the
        turn service reads it."""
        name = forced_skill_and_query(self.message, self.forced_skill or None)[0]
        return None if name is None or text_problem(name, what="skill name") else name

    def runs(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """agent_turns_create's runs (one, or two side by side), or the problems the form itself
        can name."""
        values, errors = self.service_values()
        version, compare = self._number("version", errors), self._number("compare_version", errors)
        skill = self.pinned_skill
        if (version or compare) and not skill:
            errors["version"] = "Force a skill (or start the message with /skill-name) to choose its version."
        elif compare and compare == version:
            errors["compare_version"] = "Choose another version to compare with."
        if values is None or errors:
            return [], errors
        values["label"] = self.label or None
        values["skill_versions"] = {skill: version} if skill and version else None
        if not compare:
            return [values], {}
        # Each side in a conversation of its own: neither may read the other's answer as history.
        left = {**values, "conversation_id": None}
        return [left, {**left, "skill_versions": {skill: compare}}], {}

    def _number(self, field: str, errors: dict[str, str]) -> int | None:
        text = getattr(self, field)
        if not text:
            return None
        if not text.isdigit() or int(text) < 1 or len(text) > 9:
            errors[field] = f"A version number (1 or more); got {text[:20]!r}."
            return None
        return int(text)

    def service_values(self) -> tuple[dict[str, Any] | None, dict[str, str]]:
        """agent_turn_create's arguments, or the problems the form itself can name."""
        errors: dict[str, str] = {}
        if not self.message.strip():
            errors["message"] = "Write a message (a leading /skill-name forces that skill)."
        elif len(self.message) > settings.AGENT_MAX_MESSAGE_CHARS:
            errors["message"] = f"The message is over {settings.AGENT_MAX_MESSAGE_CHARS:,} characters."
        elif problem := text_problem(self.message, what="message"):
            errors["message"] = problem
        if problem := text_problem(self.forced_skill, what="skill name"):
            errors["forced_skill"] = problem
        if self.model not in dict(model_choices()):
            errors["model"] = "Choose one of the listed models."
        conversation = None
        if self.conversation:
            conversation_id = uuid_or_none(self.conversation)
            if conversation_id is None:
                errors["conversation"] = "Not a conversation id."
            else:
                conversation = str(conversation_id)
        script = None
        if self.model == SCRIPTED:
            try:
                script = json_from_text(self.script or "null", field="script", what="script")
            except ApplicationError as exc:
                errors["script"] = f"The script is not valid JSON: {exc.detail}"
        if errors:
            return None, errors
        values = {
            "message": self.message,
            "model": self.model,
            "forced_skill": self.forced_skill or None,
            "conversation_id": conversation,
            "script": script,
        }
        return values, {}


# --- the page ------------------------------------------------------------------------------


@console_view()
def playground(request):
    """GET: the form, and with `?turn=` that turn live (with `?conversation=`, that
    conversation continued). POST: send (needs agent:run)."""
    if request.method == "POST":
        return playground_send(request)
    may_run = RUN in user_scopes(request.user)
    turn = _turn(request, request.GET["turn"]) if may_run and request.GET.get("turn") else None
    compared = _turn(request, request.GET["compare"]) if turn and request.GET.get("compare") else None
    conversation = str(turn.conversation_id) if turn and not compared else request.GET.get("conversation", "")
    form = SendInput(
        model=turn.model if turn else settings.AGENT_MODEL,
        conversation=conversation,
        # `?skill=&version=&label=`: a link that opens the playground on one version (prefilled only).
        forced_skill=request.GET.get("skill", "")[:128],
        version=request.GET.get("version", "")[:9],
        label=request.GET.get("label", "")[:36],
    )
    if turn:
        form.forced_skill, form.label = turn.forced_skill, turn.label
        form.version = str(turn.skill_versions.get(turn.forced_skill, "")) if turn.forced_skill else ""
        form.script = json.dumps(turn.script, indent=2) if turn.script else ""
    if compared and turn and turn.forced_skill:
        form.compare_version = str(compared.skill_versions.get(turn.forced_skill, ""))
    return _render(request, form=form, turn=turn, compared=compared, may_run=may_run)


@console_view(scope=RUN)
def playground_send(request):
    form = SendInput.from_post(request.POST)
    runs, errors = form.runs()
    if not runs:
        return _refused(request, form, errors, status=400)
    on_domain_error(
        request,
        lambda error: _refused(
            request, form, {_form_field(next(iter(error.fields), "message")): error.detail}, status=error.status
        ),
    )
    created = turns.agent_turns_create(
        user=request.user, runs=[{**run, "origin": TurnOrigin.PLAYGROUND} for run in runs]
    )
    turn, compared = created[0], (created[1] if len(created) > 1 else None)
    query = {"turn": turn.pk, **({"compare": compared.pk} if compared else {})}
    page_url = f"{reverse('playground')}?{urlencode(query)}"
    if not request.htmx:
        return redirect(page_url)
    form.message = ""  # sent; the next message continues this conversation
    form.conversation = "" if compared else str(turn.conversation_id)
    response = _render(request, form=form, turn=turn, compared=compared, may_run=True, fragment="workspace")
    response["HX-Push-Url"] = page_url
    return response


def _refused(request, form: SendInput, errors: dict[str, str], *, status: int) -> HttpResponse:
    """The form again, the message kept, each problem beside its field."""
    fragment = "workspace" if request.htmx else ""
    return _render(request, form=form, turn=None, may_run=True, errors=errors, status=status, fragment=fragment)


def _form_field(field: str) -> str:
    """The form field a service error names: a pin (`skill_versions.<name>`) is the version boxes."""
    return "version" if field.startswith("skill_versions") else field


def _reader(request) -> TurnReader:
    """Whose turns the playground shows this user: acting with `agent:run`, an admin any turn,
    anyone else their own (a user without it reads none here)."""
    reader = turn_selectors.turn_reader(user=request.user, scopes=user_scopes(request.user) & {RUN})
    if reader is None:
        raise Http404("No such turn.")
    return reader


def _turn(request, turn_id) -> AgentTurn:
    """The turn, if this user may read it; else the 404 page (NotFound, through console_view)."""
    parsed = uuid_or_none(str(turn_id))
    if parsed is None:
        raise Http404("No such turn.")
    return turn_selectors.turn_get_for_reader(reader=_reader(request), turn_id=parsed)


def _render(
    request,
    *,
    form: SendInput,
    turn: AgentTurn | None,
    may_run: bool,
    compared: AgentTurn | None = None,
    errors: dict[str, str] | None = None,
    status: int = 200,
    fragment: str = "",
) -> HttpResponse:
    conversation = form.conversation if may_run else ""
    known = may_run and _is_uuid(conversation)
    context: dict[str, Any] = {
        "form": form,
        "errors": errors or {},
        "may_run": may_run,
        "models": model_choices(),
        "skill_names": [skill.name for skill in registry_snapshot().skills] if may_run else [],
        "label_names": label_names_in_use() if may_run else [],
        "skill_versions": (skill_version_numbers(name=form.pinned_skill) if may_run and form.pinned_skill else []),
        "conversations": (
            turn_selectors.conversations_recent(user=request.user, include=conversation if known else None)
            if may_run
            else []
        ),
        "earlier": (
            turn_selectors.conversation_turns(reader=_reader(request), conversation_id=conversation, before=turn)
            if known
            else []
        ),
        "script_example": SCRIPT_EXAMPLE,
        "demo_default": settings.AGENT_MODEL == "offline",
        "allow_scripted": SCRIPTED in turns.agent_models_allowed(),
    }
    if turn is not None:
        shown = _turn_context(turn, after=0)
        context.update(shown)  # the first panel's turn is also the page's (its form, its conversation)
        context["panels"] = [shown]
        if compared is not None:
            context["panels"].append(_turn_context(compared, after=0, slot=COMPARED_SLOT))
    template = "agents/playground.html" + (f"#{fragment}" if fragment else "")
    return render(request, template, context, status=status)


def _is_uuid(value: str) -> bool:
    return uuid_or_none(value) is not None


# --- the live trace ------------------------------------------------------------------------


@dataclass(frozen=True)
class DetailRow:
    key: str
    kind: str  # "text" | "block" | "json" | "names" | "prompt"
    value: Any


@dataclass(frozen=True)
class EventView:
    seq: int
    type: str
    at: Any
    summary: str
    rows: tuple[DetailRow, ...]
    tone: str  # "" | "bad" | "warn" | "good": the colour of its marker


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _row(key: str, value: Any) -> DetailRow:
    if key == "system_prompt":
        return DetailRow(key, "prompt", value)
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return DetailRow(key, "names", [str(item) for item in value])
    if not _scalar(value):
        return DetailRow(key, "json", json.dumps(value, indent=2, ensure_ascii=False))
    if isinstance(value, str) and ("\n" in value or len(value) > 120):
        return DetailRow(key, "block", value)
    return DetailRow(key, "text", "—" if value is None or value == "" else value)


def _trimmed(data: dict[str, Any]) -> str:
    """What trimming took out, in words: the raw list of removals reads as a Python repr."""
    parts = []
    for removal in data.get("removed") or []:
        if not isinstance(removal, dict):
            parts.append(str(removal))
        elif removal.get("kind") == "section":
            parts.append(f"dropped the {removal.get('name', '')} section")
        elif removal.get("kind") == "message":
            parts.append(f"dropped a {removal.get('role', '')} message")
        elif removal.get("kind") == "truncated":
            parts.append(f"cut {removal.get('target', '')} to {removal.get('to_chars', '?')} chars")
    fitted = f" to fit {data['limit']} tokens" if data.get("limit") else ""
    return (", ".join(parts) + fitted)[:200]


def _summary(kind: str, data: dict[str, Any]) -> tuple[str, str]:
    """One line for an event's closed row, and its tone."""
    step = f"step {data['step']} · " if "step" in data else ""
    if kind == "llm_call":
        calls = data.get("tool_calls") or []
        then = f"calls {', '.join(map(str, calls))}" if calls else "answers"
        tokens = f"{data.get('prompt_tokens', 0)}+{data.get('completion_tokens', 0)} tokens"
        return f"{step}{data.get('model', '')} · {tokens} · {data.get('latency_ms', 0)} ms · {then}", ""
    if kind == "tool_call":
        ok = "ok" if data.get("ok") else "failed"
        return f"{step}{data.get('tool', '')} · {ok} · {data.get('latency_ms', 0)} ms", "" if data.get("ok") else "bad"
    if kind == "tool_error":
        return f"{step}{data.get('tool', '')}: {str(data.get('error', ''))[:140]}", "bad"
    if kind == "tool_refused":
        return f"{step}{data.get('tool', '')} refused: not allowed while {data.get('skill', '')} is forced", "bad"
    if kind == "skill_activated":
        return f"{data.get('skill', '')} v{data.get('version', '?')} via {data.get('trigger', '')}", "good"
    if kind == "skill_reminder":
        return f"{step}reminded of {data.get('skill', '')}", ""
    if kind == "rule_fired":
        return f"{data.get('name', '')}: {str(data.get('why', ''))[:140]}", "good"
    if kind == "auto_invoke":
        return f"{step}rule {data.get('rule', '')} called {data.get('tool', '')}", "warn"
    if kind == "context_trimmed":
        return f"{step}{_trimmed(data)}", "warn"
    if kind in ("warning", "budget_exceeded"):
        return f"{step}{str(data.get('message') or '')[:160]}", "warn"
    shown = [f"{key} {value}" for key, value in data.items() if _scalar(value) and key != "step"][:3]
    return step + " · ".join(str(item)[:60] for item in shown), ""


def event_view(event: TraceEvent) -> EventView:
    data = event.data if isinstance(event.data, dict) else {"value": event.data}
    order = [key for key in _FIRST_KEYS if key in data]
    order += [key for key in data if key not in order and key not in _LAST_KEYS]
    order += [key for key in _LAST_KEYS if key in data]
    summary, tone = _summary(event.type, data)
    return EventView(
        seq=event.seq,
        type=event.type,
        at=event.at,
        summary=summary,
        rows=tuple(_row(key, data[key]) for key in order),
        tone=tone,
    )


def _slot(asked: str) -> dict[str, str]:
    """The panel a poll or a feedback form speaks for: the compared one, or the page's turn."""
    slot = COMPARED_SLOT if asked == COMPARED_SLOT else ""
    return {"slot": slot, "sfx": f"-{slot}" if slot else ""}


def _turn_context(turn: AgentTurn, *, after: int, slot: str = "") -> dict[str, Any]:
    """What one turn panel shows. `slot` tells the second panel of a side-by-side run apart:
    its elements' ids end in `-{slot}`, so each panel's poll fills in its own panel."""
    events = [event_view(event) for event in turn_selectors.turn_trace_events(turn=turn, after=after)]
    elapsed = turn.finished_at - turn.started_at if turn.finished_at and turn.started_at else None
    return {
        **_slot(slot),
        "skills_run": turn_selectors.turn_skills_run(turn=turn),
        "turn": turn,
        "events": events,
        "elapsed_ms": int(elapsed.total_seconds() * 1000) if elapsed else None,
        # Models answer in Markdown; rendered like a SKILL.md body (raw HTML off, then nh3).
        "answer_html": render_markdown(turn.answer) if turn.answer else "",
        "last_seq": events[-1].seq if events else after,
        "totals": turn_selectors.turn_totals(turn=turn),
        "poll_every": POLL_EVERY,
    }


@console_view(scope=RUN)
def turn_events(request, turn_id):
    """The poll: trace events after `after`, the status, totals and answer (out of band), and the
    next poller; 286 once the turn has finished, so htmx stops asking."""
    # The turn's status is read before its events: a turn's last events are written with its
    # outcome, so a turn seen finished here has all of its events in the read that follows.
    turn = _turn(request, turn_id)
    after = min(max(0, whole_number(request.GET.get("after", "0")) or 0), MAX_SEQ)
    if not request.htmx:
        return redirect(_turn_page(turn))
    context = _turn_context(turn, after=after, slot=_slot(request.GET.get("slot", ""))["slot"])
    status = 286 if turn.is_finished else 200
    return render(request, "agents/playground.html#poll", context, status=status)


@console_view(scope=RUN)
def version_choices(request):
    """The forced skill's versions for the version boxes, asked as its name is typed."""
    name = request.GET.get("forced_skill", "").strip().lstrip("/")[:128]
    versions = [] if not name or text_problem(name, what="skill name") else skill_version_numbers(name=name)
    return render(request, "agents/playground.html#version-choices", {"skill_versions": versions})


@console_view(scope=RUN)
def turn_feedback(request, turn_id):
    turn = _turn(request, turn_id)
    slot = _slot(request.POST.get("slot", ""))
    if request.method == "POST":
        on_domain_error(request, lambda error: _feedback_refused(request, turn, slot, error))
        turn = turns.agent_turn_feedback(turn=turn, rating=request.POST.get("rating", ""))
        if request.htmx:
            return render(request, "agents/playground.html#feedback", {**slot, "turn": turn, "thanked": True})
        messages.success(request, "Thanks: your feedback counts toward the loaded skills' analytics.")
    return redirect(_turn_page(turn))


def _turn_page(turn: AgentTurn) -> str:
    return f"{reverse('playground')}?{urlencode({'turn': str(turn.pk)})}"


def _feedback_refused(request, turn: AgentTurn, slot: dict, error: ApplicationError) -> HttpResponse:
    if request.htmx:
        return render(
            request, "agents/playground.html#feedback", {**slot, "turn": turn, "feedback_error": error.detail}
        )
    return flash_back(request, f"Feedback not recorded: {error.detail}", default=_turn_page(turn))


@console_view(scope=RUN)
def turn_cancel(request, turn_id):
    """Cancel a queued or running turn (as `POST /agent/turns/{id}/cancel`); the next poll shows it."""
    turn = _turn(request, turn_id)
    on_domain_error(request, lambda error: _cancel_answer(request, turn, refused=error))
    if request.method == "POST":
        turns.agent_turn_cancel(turn=turn)
        return _cancel_answer(request, turn)
    return redirect(_turn_page(turn))


def _cancel_answer(request, turn: AgentTurn, *, refused: ApplicationError | None = None) -> HttpResponse:
    """Nothing for htmx (the next poll shows the turn as it is), else back to the turn."""
    if refused is not None:
        messages.info(request, f"Not cancelled: {refused.detail}")
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(_turn_page(turn))


urlpatterns = [
    path("playground/", playground, name="playground"),
    path("playground/versions/", version_choices, name="playground-versions"),
    path("playground/turns/<str:turn_id>/events/", turn_events, name="playground-events"),
    path("playground/turns/<str:turn_id>/feedback/", turn_feedback, name="playground-feedback"),
    path("playground/turns/<str:turn_id>/cancel/", turn_cancel, name="playground-cancel"),
]
