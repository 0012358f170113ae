"""The console's turn pages: `/turns/`, every turn a user may read with the API's filters, their
counts and why the failed ones failed; `/turns/<id>/`, one turn's trace, skills, rules,
feedback, cost and timing.

The analytics pages link their counts here (`?skill=&version=&event=failed&from=&to=`): the
list is then the turns behind that count, and says how many events of it came from agents
outside the registry, which have no turn. Like the playground it lives in the agents app (the
registry knows nothing of turns) and reads through `agents.turns.selectors`, as the API does.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django_htmx.http import push_url

from agents.models import FailureCause, TurnOrigin, TurnStatus
from agents.turns import selectors as turn_selectors
from agents.turns.api import TurnFilterSerializer, turn_filter_params
from agents.turns.playground import event_view
from agents.turns.selectors import ANALYTICS, RUN, TurnFilter, TurnReader
from registry.console.access import console_view, user_scopes
from registry.console.inputs import uuid_or_none, whole_number
from registry.selectors.catalog_evals import catalog_eval_run_for_turn
from registry.selectors.evals import eval_run_for_turn
from registry.skillformat.rendering import render_markdown

PAGE_SIZE = 50
DEFAULT_DAYS = 30
# The filters the list keeps in its links, in the order the query string shows them.
FILTER_KEYS = (
    "skill",
    "source",
    "version",
    "trigger",
    "event",
    "status",
    "model",
    "origin",
    "feedback",
    "cause",
    "detail",
    "q",
    "from",
    "to",
)
EVENT_WORDS = {
    "loaded": "loads",
    "executed": "runs",
    "succeeded": "successes",
    "failed": "failures",
    "outcome": "outcomes",
    "feedback": "feedback",
}


def _reader(request) -> TurnReader:
    reader = turn_selectors.turn_reader(user=request.user, scopes=user_scopes(request.user) & {RUN, ANALYTICS})
    if reader is None:
        raise PermissionDenied("Your role reads no turns.")
    return reader


def _filters(params) -> tuple[TurnFilter, dict[str, str], dict[str, str]]:
    """The filters, the values as given (for the form and links) and the problems: a bad filter
    is named and left out, the others still apply. As on the analytics pages, a first visit
    shows the last 30 days and an emptied date field means "no bound"."""
    if "from" not in params and "to" not in params:
        today = timezone.now().date()
        params = params.copy()
        params["from"], params["to"] = (today - dt.timedelta(days=DEFAULT_DAYS - 1)).isoformat(), today.isoformat()
    given = turn_filter_params(params)
    values = {key: str(given[key]) for key in given}
    parsed = TurnFilterSerializer(data=given)
    if parsed.is_valid():
        return parsed.turn_filter(), values, {}
    problems = {key: " ".join(str(m) for m in messages) for key, messages in parsed.errors.items()}
    parsed = TurnFilterSerializer(data=turn_filter_params(params, leave_out=problems))
    return (parsed.turn_filter() if parsed.is_valid() else TurnFilter()), values, problems


def _query(given: dict[str, str], unbounded: tuple[str, ...] = (), **changes: Any) -> str:
    """The list's address with these filters: the ones set, and each date in `unbounded` as
    given empty (`to=`: no bound; left out, it would be the first visit's default)."""
    values = {**given, **{key: str(value) for key, value in changes.items() if value is not None}}
    for key, value in changes.items():
        if value is None:
            values.pop(key, None)
    return urlencode(
        [
            (key, values.get(key, ""))
            for key in FILTER_KEYS
            if values.get(key, "") != "" or (key in unbounded and key not in values)
        ]
    )


def _unbounded(params) -> tuple[str, ...]:
    """The dates a query string gives empty: "no bound", as the clear-filters link asks."""
    return tuple(key for key in ("from", "to") if key in params and params[key] == "")


@dataclass(frozen=True)
class Choice:
    value: str
    title: str
    count: int | None
    href: str
    current: bool


@console_view()
def turn_list(request):
    reader = _reader(request)
    filters, given, problems = _filters(request.GET)
    unbounded = _unbounded(request.GET)
    counts = turn_selectors.turn_counts(reader=reader, filters=filters)
    page = max(1, whole_number(request.GET.get("page", "1")) or 1)
    offset = (page - 1) * PAGE_SIZE
    turns = list(turn_selectors.turns_filtered(reader=reader, filters=filters)[offset : offset + PAGE_SIZE])
    statuses = [
        Choice(
            "", "All", sum(counts.by_status.values()), "?" + _query(given, unbounded, status=None), not filters.status
        )
    ]
    statuses += [
        Choice(
            value, value, counts.by_status[value], "?" + _query(given, unbounded, status=value), filters.status == value
        )
        for value in TurnStatus.values
    ]
    context = {
        "reader": reader,
        "filters": filters,
        "given": given,
        "problems": problems,
        "counts": counts,
        "statuses": statuses,
        "origins": [(value, TurnOrigin(value).label, counts.by_origin[value]) for value in TurnOrigin.values],
        "causes": [
            (cause, "?" + _query(given, unbounded, cause=cause.cause, detail=cause.detail if cause.detail else None))
            for cause in counts.causes
        ],
        "turns": turns,
        "page": page,
        "previous": "?" + _query(given, unbounded) + f"&page={page - 1}" if page > 1 else "",
        "next": "?" + _query(given, unbounded) + f"&page={page + 1}" if offset + PAGE_SIZE < counts.total else "",
        "first_shown": offset + 1 if turns else 0,
        "last_shown": offset + len(turns),
        "events": turn_selectors.turn_event_count(reader=reader, filters=filters),
        "event_word": EVENT_WORDS.get(filters.event or "", ""),
        "cause_title": FailureCause(filters.cause).label if filters.cause else "",
        "filtered": bool(given),
        # An empty page says "no turns yet" only when the reader has none at all: the first
        # visit's default dates are a filter that an older turn can fall outside of.
        "any_turn": bool(turns) or turn_selectors.turns_filtered(reader=reader, filters=TurnFilter()).exists(),
        "clear": [
            (key, value, "?" + _query(given, unbounded, **{key: None}))
            for key, value in given.items()
            if key != "status"
        ],
        "event_kinds": list(EVENT_WORDS),
    }
    if not request.htmx:
        return render(request, "agents/turns.html", context, status=400 if problems else 200)
    response = render(request, "agents/turns.html#turn-results", context, status=400 if problems else 200)
    # The filters as typed become the page's address, so a filtered view can be shared: only the
    # filters that are set (the form sends every field, empty ones too), dates kept as given.
    return push_url(response, f"{reverse('turn-list')}?{_query(given, unbounded)}")


@console_view()
def turn_detail(request, turn_id: str):
    reader = _reader(request)
    parsed = uuid_or_none(turn_id)
    if parsed is None:
        raise Http404("No such turn.")
    turn = turn_selectors.turn_get_for_reader(reader=reader, turn_id=parsed)  # NotFound: the 404 page
    trace = turn_selectors.turn_trace_events(turn=turn)
    return render(
        request,
        "agents/turn_detail.html",
        {
            "turn": turn,
            "events": [event_view(event) for event in trace],
            "skills": turn_selectors.trace_skills_loaded(trace),
            "rules": [event.data for event in trace if event.type == "rule_fired" and isinstance(event.data, dict)],
            "totals": turn_selectors.turn_totals(turn=turn),
            "elapsed_ms": turn.duration_ms,
            "answer_html": render_markdown(turn.answer) if turn.answer else "",
            "cause_title": FailureCause(turn.failure_cause).label if turn.failure_cause else "",
            "is_own": turn.user_id == request.user.pk,
            "eval_run": eval_run_for_turn(turn_id=turn.pk) if turn.origin == TurnOrigin.EVAL else None,
            "catalog_run": catalog_eval_run_for_turn(turn_id=turn.pk) if turn.origin == TurnOrigin.EVAL else None,
            "author": turn.user.get_username() if turn.user else "",
        },
    )


urlpatterns = [
    path("turns/", turn_list, name="turn-list"),
    path("turns/<str:turn_id>/", turn_detail, name="turn-detail"),
]
