"""The turn list at scale: the filtered list and its counts over 100,000 turns (target p50 ≤ 100 ms).

PostgreSQL only (give it a database of its own: the script empties the turn and usage tables).

1. Bulk-loads N turns (default 100,000) over 90 days with generate_series: 20 authors, three
   models and origins, ~70% succeeded, ~22% failed (with causes), ~5% cancelled; each finished
   turn loaded one or two of 200 skills x 3 versions, with the usage events a worker writes
   (loaded, the outcome, feedback on ~10%).
2. For each filter an analyst or author uses, p50/p99 of what a page of the list costs: the
   first 50 rows with their skills, the counts beside the filters and the failure causes (and,
   for a drill-down from an analytics count, its event counts), through the selectors the API
   and the console call.

    DATABASE_URL=postgres://.../bench_turns .venv/bin/python bench/turn_list.py [--turns 100000] [--repeat 30]

Without PostgreSQL it says so and stops (`make bench` runs it on SQLite too).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import describe, percentile, prepare_environment, setup_django, timed  # noqa: E402

SKILLS, VERSIONS, DAYS, AUTHORS = 200, 3, 90, 20

TURNS_SQL = """
INSERT INTO agents_agentturn
    (id, user_id, message, model, origin, forced_skill, label, skill_versions, status, cancel_requested, answer, error,
     failure_cause, failure_detail, steps, prompt_tokens, completion_tokens, cost, attempts, takeovers,
     feedback_rating, feedback_comment, created_at, started_at, finished_at)
SELECT gen_random_uuid(),
       %(first_user)s + mod(i, %(authors)s),
       'bench turn ' || i || ': ' || (ARRAY['summarise the revenue report', 'write a sql query for churn',
            'review this pull request', 'extract tables from the pdf', 'plan the database migration'])[1 + mod(i, 5)],
       (ARRAY['gpt-4o-mini', 'claude-sonnet', 'offline'])[1 + mod(i, 3)],
       (ARRAY['api', 'api', 'playground', 'eval'])[1 + mod(i / 3, 4)],
       '', '', '{}'::jsonb,
       status, false,
       CASE WHEN status = 'succeeded' THEN 'done' ELSE '' END,
       CASE cause WHEN 'aborted' THEN 'aborted: no data for that period'
                  WHEN 'tool_error' THEN 'stopped after 10 iterations without a final answer'
                  WHEN 'budget_exceeded' THEN 'stopped: the turn exceeded its time budget of 120 s'
                  WHEN 'model_error' THEN 'the model call failed: rate limited'
                  WHEN 'cancelled' THEN 'the turn was cancelled' ELSE '' END,
       cause,
       CASE cause WHEN 'aborted' THEN 'no data for that period' WHEN 'budget_exceeded' THEN 'time'
                  WHEN 'tool_error' THEN (ARRAY['run_skill', 'read_skill_file', 'write_file'])[1 + mod(i, 3)]
                  ELSE '' END,
       1 + mod(i, 6), 500 + mod(i * 7, 4000), 50 + mod(i * 13, 600), mod(i, 97) / 10000.0, 1, 0,
       CASE WHEN mod(i, 10) = 0 THEN (CASE WHEN mod(i, 30) = 0 THEN -1 ELSE 1 END) END,
       CASE WHEN mod(i, 30) = 0 THEN 'not what I asked' ELSE '' END,
       created, created + interval '1 second', CASE WHEN status IN ('running', 'queued') THEN NULL
                                                    ELSE created + (1 + random() * 30) * interval '1 second' END
FROM (
    SELECT i, drawn.created,
           CASE WHEN r < 0.70 THEN 'succeeded' WHEN r < 0.92 THEN 'failed' WHEN r < 0.97 THEN 'cancelled'
                WHEN r < 0.985 THEN 'running' ELSE 'queued' END AS status,
           CASE WHEN r < 0.70 OR r >= 0.97 THEN '' WHEN r < 0.92 THEN
                (ARRAY['aborted', 'tool_error', 'tool_error', 'budget_exceeded', 'model_error'])[1 + mod(i, 5)]
                ELSE 'cancelled' END AS cause
    FROM (SELECT i, random() AS r, %(now)s - random() * interval '%(days)s days' AS created
          FROM generate_series(1, %(turns)s) AS i) AS drawn
) AS turns
"""

# One or two skills a finished turn: a load, and the outcome of a succeeded or failed turn.
EVENTS_SQL = """
INSERT INTO registry_usageevent
    (event_id, kind, skill_name, version, trigger, label, model, source, turn_id, client_id,
     duration_ms, tokens, cost, rating, at)
SELECT t.id || ':' || kinds.kind || ':' || s.n, kinds.kind,
       'skill-' || lpad(mod(abs(hashtext(t.id::text)) + s.n * 37, %(skills)s)::text, 3, '0'),
       1 + mod(abs(hashtext(t.id::text)), %(versions)s),
       (ARRAY['read_skill', 'task_match', 'forced'])[1 + mod(abs(hashtext(t.id::text)) / 7, 3)],
       '', t.model, 'runtime', t.id, '',
       NULL, NULL, NULL,
       CASE WHEN kinds.kind = 'feedback' THEN t.feedback_rating END,
       t.finished_at
FROM agents_agentturn AS t
CROSS JOIN LATERAL generate_series(1, 1 + mod(abs(hashtext(t.id::text)), 2)) AS s(n)
CROSS JOIN LATERAL (VALUES ('loaded'), (t.status), ('feedback')) AS kinds(kind)
WHERE t.finished_at IS NOT NULL
  AND (kinds.kind = 'loaded' OR kinds.kind IN ('succeeded', 'failed')
       OR (kinds.kind = 'feedback' AND t.feedback_rating IS NOT NULL))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per filter (default 30)")
    args = parser.parse_args()

    prepare_environment("turn-list")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    if connection.vendor != "postgresql":
        print("turn list bench: needs PostgreSQL (set DATABASE_URL to a database of its own); skipped.")
        return

    from agents.turns import selectors
    from agents.turns.selectors import TurnFilter

    users = get_user_model()
    author_group = Group.objects.get_or_create(name="author")[0]
    authors = []
    for n in range(AUTHORS):
        user, _ = users.objects.get_or_create(username=f"bench-author-{n:02d}")
        user.groups.add(author_group)
        authors.append(user)
    analyst, _ = users.objects.get_or_create(username="bench-analyst")
    analyst.groups.add(Group.objects.get_or_create(name="analyst")[0])
    first_user = min(user.pk for user in authors)
    assert [user.pk for user in sorted(authors, key=lambda u: u.pk)] == list(range(first_user, first_user + AUTHORS))

    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    print(f"turn list bench: {args.turns:,} turns over {DAYS} days, {SKILLS} skills x {VERSIONS} versions")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE agents_agentturn, agents_conversation, registry_usageevent CASCADE")
        cursor.execute("SELECT setseed(0.42)")  # the same turns every run
        params = {
            "turns": args.turns,
            "days": DAYS,
            "now": now,
            "authors": AUTHORS,
            "first_user": first_user,
            "skills": SKILLS,
            "versions": VERSIONS,
        }
        timings = timed(lambda: cursor.execute(TURNS_SQL, params), repeat=1)
        timings += timed(lambda: cursor.execute(EVENTS_SQL, params), repeat=1)
        # As autovacuum leaves a table at rest: statistics, and a visibility map for index-only scans.
        cursor.execute("VACUUM ANALYZE agents_agentturn")
        cursor.execute("VACUUM ANALYZE registry_usageevent")
        cursor.execute("SELECT count(*) FROM registry_usageevent")
        events = cursor.fetchone()[0]
    print(f"  loaded in {timings[0] / 1000:.1f} s (turns) + {timings[1] / 1000:.1f} s ({events:,} usage events)")

    analyst_reader = selectors.turn_reader(user=analyst, scopes={"analytics:read"})
    author_reader = selectors.turn_reader(user=authors[3], scopes={"agent:run"})
    assert analyst_reader and analyst_reader.sees_all and author_reader and not author_reader.sees_all
    today = now.date()
    month = TurnFilter(date_from=today - dt.timedelta(days=29), date_to=today)
    cases = [
        ("analyst, last 30 days (the page's default)", analyst_reader, month),
        ("analyst, all days", analyst_reader, TurnFilter()),
        ("analyst, failed, all days", analyst_reader, TurnFilter(status="failed")),
        ("analyst, skill", analyst_reader, TurnFilter(skill="skill-042")),
        (
            "analyst, a version's failures (analytics link)",
            analyst_reader,
            TurnFilter(
                skill="skill-042",
                version=2,
                event="failed",
                date_from=today - dt.timedelta(days=29),
                date_to=today,
            ),
        ),
        (
            "analyst, skill + trigger + model",
            analyst_reader,
            TurnFilter(skill="skill-042", trigger="read_skill", model="claude-sonnet"),
        ),
        ("analyst, feedback down", analyst_reader, TurnFilter(feedback="down")),
        ("analyst, origin eval + failed", analyst_reader, TurnFilter(origin="eval", status="failed")),
        ("analyst, tool errors of run_skill", analyst_reader, TurnFilter(cause="tool_error", detail="run_skill")),
        (
            "analyst, message contains, last 30 days",
            analyst_reader,
            TurnFilter(q="migration", date_from=month.date_from, date_to=today),
        ),
        (
            "analyst, failed, last 30 days",
            analyst_reader,
            TurnFilter(status="failed", date_from=month.date_from, date_to=today),
        ),
        ("analyst, message contains, all days", analyst_reader, TurnFilter(q="migration")),
        ("author, own turns, all days", author_reader, TurnFilter()),
        ("author, own failed of a skill", author_reader, TurnFilter(skill="skill-042", status="failed")),
    ]

    def page(reader, filters):
        def run():
            rows = list(selectors.turns_filtered(reader=reader, filters=filters)[:50])
            counts = selectors.turn_counts(reader=reader, filters=filters)
            selectors.turn_event_count(reader=reader, filters=filters)
            return rows, counts

        return run

    print(f"  a page of the list (50 rows + counts + causes), p50/p99 over {args.repeat} runs:")
    medians = []
    for title, reader, filters in cases:
        run = page(reader, filters)
        rows, counts = run()  # warm the connection and caches once
        samples = timed(run, repeat=args.repeat)
        medians.append(percentile(samples, 50))
        print(f"    {title:<48} total {counts.total:>6,}  {describe(samples)}")
    print(f"  worst p50 {max(medians):.1f} ms (target ≤ 100 ms)")
    # The figures depend on what else the machine is doing: print it with them.
    print(f"  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
