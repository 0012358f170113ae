"""Trace stored per turn: a 20-step turn with 1,000 skills in the registry, whose system prompt
(the skills block at its 18,000-char budget) every `llm_call` event carries (SPEC §6.10).

    .venv/bin/python bench/trace_size.py [--skills 1000] [--turns 4] [--steps 20]

Each turn runs as a worker runs it (agent_turn_claim, agent_turn_run: resolve, the runtime, the
`scripted` model, DatabaseTraceSink with its writer thread, agent_turn_finish), a script of
`--steps` tool calls and an answer. Per turn it prints:

- inline: the events as the API gives them, each `llm_call` with its `system_prompt` in its data,
  which is how they were stored before prompts were stored apart;
- stored: what the trace occupies now (`stored_bytes`: each event's data as JSON, its prompt key,
  and the text of each prompt it references, counted in full even when another turn stored it);
- added: what the turn added to the database (a prompt stored already by an earlier turn of the
  same conversation, with the same skills listed, is not stored again);
- on PostgreSQL, the same rows' size on disk (`pg_column_size`, after TOAST compression).

The turns alternate between two conversations and ask the same question twice in each, so the
second asking of each shares its prompt with the first. Target: <= 50 KB stored for a 20-step turn.

Uses DATABASE_URL when set (give it a database of its own), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import prepare_environment, setup_django  # noqa: E402

TARGET_BYTES = 50_000


def stored_bytes(turn_id: Any) -> int:
    """Bytes the turn's trace is stored in: each event's data as JSON, its prompt key, and the text
    of each distinct prompt it references (once, however many of its events reference it)."""
    events, prompts = _stored(turn_id)
    return events + sum(prompts.values())


def _stored(turn_id: Any) -> tuple[int, dict[str, int]]:
    """Bytes of the turn's events (data and prompt key), and of each prompt they reference."""
    from agents.models import PromptText, TraceEvent

    rows = list(TraceEvent.objects.filter(turn_id=turn_id).values_list("data", "prompt_id"))
    keys = {key for _, key in rows if key}
    texts = PromptText.objects.filter(sha256__in=keys).values_list("sha256", "text")
    return sum(len(json.dumps(data)) + len(key or "") for data, key in rows), {k: len(t.encode()) for k, t in texts}


def inline_bytes(turn_id: Any) -> int:
    """Bytes of the turn's events as the API gives them: each with its whole data, prompt included."""
    from agents.models import AgentTurn
    from agents.turns.selectors import turn_trace_events

    return sum(len(json.dumps(event.data)) for event in turn_trace_events(turn=AgentTurn.objects.get(pk=turn_id)))


def disk_bytes(turn_id: Any) -> int | None:
    """On PostgreSQL, the turn's event rows and the prompts they reference as stored on disk."""
    from django.db import connection

    from agents.models import PromptText, TraceEvent

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT (SELECT coalesce(sum(pg_column_size(e.*)), 0) FROM {TraceEvent._meta.db_table} e
                        WHERE e.turn_id = %(turn)s)
                     + (SELECT coalesce(sum(pg_column_size(p.*)), 0) FROM {PromptText._meta.db_table} p
                        WHERE p.sha256 IN (SELECT prompt_id FROM {TraceEvent._meta.db_table}
                                           WHERE turn_id = %(turn)s))""",
            {"turn": turn_id},
        )
        (total,) = cursor.fetchone()
    return int(total)


def run_turn(*, message: str, conversation: Any, steps: int) -> Any:
    from agents.models import AgentTurn
    from agents.turns.services import agent_turn_claim, agent_turn_run
    from bench.runtime_step import script_for

    turn = AgentTurn.objects.create(
        conversation=conversation, message=message, model="scripted", script=script_for(steps)
    )
    claimed = agent_turn_claim(turn_id=str(turn.pk))
    assert claimed is not None
    result = agent_turn_run(claimed=claimed)
    if result.status != "succeeded" or result.steps != steps + 1:
        raise SystemExit(f"the turn did not run as scripted: {result.status} after {result.steps}: {result.error}")
    return turn.pk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    var = prepare_environment("trace-size")
    os.environ.setdefault("AGENT_ALLOW_SCRIPTED", "True")
    os.environ["AGENT_MAX_ITERATIONS"] = str(args.steps + 1)
    os.environ["AGENT_MAX_TOTAL_TOKENS"] = str(10_000 * (args.steps + 1))  # 21 calls of a ~5k-token prompt
    setup_django()
    from django.db import connection

    from agents.models import AgentTurn, Conversation, PromptText
    from agents.turns.trace import step_writer_shutdown
    from bench.runtime_step import publish_skills

    publish_skills(args.skills)
    conversations = [Conversation.objects.create(title=f"bench trace size {n}") for n in range(2)]
    questions = ["Summarise the sql query numbers and multiply them", "Chart the invoice and billing totals"]
    print(
        f"database: {connection.vendor}; {args.skills} skills; {args.turns} turns x {args.steps} tool steps + 1 "
        "answer, scripted model, in 2 conversations"
    )
    rows = []
    for n in range(args.turns):
        known = set(PromptText.objects.values_list("sha256", flat=True))
        turn_id = run_turn(message=questions[n % 2], conversation=conversations[n % 2], steps=args.steps)
        events = AgentTurn.objects.get(pk=turn_id).trace_events.count()
        event_bytes, prompts = _stored(turn_id)
        added = event_bytes + sum(size for key, size in prompts.items() if key not in known)
        rows.append((events, inline_bytes(turn_id), stored_bytes(turn_id), added, disk_bytes(turn_id), prompts))
    for n, (events, inline, stored, added, disk, prompts) in enumerate(rows, 1):
        on_disk = f", {disk / 1000:.1f} KB on disk" if disk is not None else ""
        texts = " + ".join(f"{size / 1000:.1f}" for size in prompts.values())
        print(
            f"  turn {n}: {events} events; inline {inline / 1000:.1f} KB, stored {stored / 1000:.1f} KB (events "
            f"{(stored - sum(prompts.values())) / 1000:.1f} KB, prompt texts {texts} KB){on_disk}; "
            f"added {added / 1000:.1f} KB"
        )
    by_type: dict[str, int] = {}
    for kind, data in AgentTurn.objects.get(pk=turn_id).trace_events.values_list("type", "data"):
        by_type[kind] = by_type.get(kind, 0) + len(json.dumps(data))
    shares = ", ".join(f"{kind} {size / 1000:.1f} KB" for kind, size in sorted(by_type.items(), key=lambda i: -i[1]))
    print(f"  the last turn's event data by type (prompts apart): {shares}")
    stored_p50 = statistics.median(row[2] for row in rows)
    inline_p50 = statistics.median(row[1] for row in rows)
    print(
        f"  per turn (median): inline {inline_p50 / 1000:.1f} KB -> stored {stored_p50 / 1000:.1f} KB "
        f"({inline_p50 / stored_p50:.1f}x less); at 100,000 such turns {stored_p50 * 100_000 / 1e9:.1f} GB "
        f"instead of {inline_p50 * 100_000 / 1e9:.1f} GB"
    )
    verdict = "met" if stored_p50 <= TARGET_BYTES else "MISSED"
    print(f"  verdict: {stored_p50 / 1000:.1f} KB stored per {args.steps}-step turn (target <= 50 KB) - {verdict}")
    step_writer_shutdown()
    AgentTurn.objects.filter(conversation__in=conversations).delete()
    Conversation.objects.filter(pk__in=[c.pk for c in conversations]).delete()
    shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    main()
