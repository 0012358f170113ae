"""Console page server time with 1,000 skills and 10,000 versions, beside a bare Django view.

    .venv/bin/python bench/console_pages.py [--skills 1000] [--versions-per-skill 10] [--repeat 200]

Each request goes through the whole middleware stack in-process (Django's test client: session,
auth, CSRF, messages, htmx), logged in as an author, so the figure is server time without the
network. The baseline is `/bench/bare-page/`: a login-protected view that returns a few bytes
through the same stack. Targets (p50): skills list, skill page and editor <= 50 ms; one
live-validation round trip <= 30 ms (the preview is its own request, debounced longer). Uses
DATABASE_URL when set (give it a database of its own; skills are named bench-console-*, and
reused on a second run), else a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import WORDS, describe, percentile, prepare_environment, setup_django, timed  # noqa: E402


def skill_text(rng: random.Random, index: int, revision: int) -> str:
    topic = rng.sample(WORDS, 3)
    steps = "\n".join(f"{n}. {rng.choice(WORDS).capitalize()} the {rng.choice(WORDS)} step." for n in range(1, 12))
    return (
        f"---\nname: bench-console-{index:04d}\n"
        f"description: Handles {' and '.join(topic)} tasks (revision {revision}). Use when asked about {topic[0]}.\n"
        f"tags: [{', '.join(topic)}]\ntriggers: [task_match]\n---\n\n# Skill {index}\n\n## Steps\n\n{steps}\n"
    )


def populate(skills: int, versions: int) -> None:
    """Bulk-insert the rows a publish would write (parsed by the real parser), skipping the
    per-publish audit, notification and token counting: 10,000 publishes through the service
    take most of an hour on a busy machine, and only the read side is measured here."""
    from django.db import transaction

    from registry.models import Blob, Skill, SkillFile, SkillVersion
    from registry.services.generation import registry_changed
    from registry.skillformat.bundle import bundle_from_parts
    from registry.skillformat.skillmd import parse_skill_md

    if Skill.objects.filter(name__startswith="bench-console-").count() >= skills:
        return
    rng = random.Random(11)
    script = ("scripts/run.sh", b"#!/bin/sh\necho ok\n", True)
    with transaction.atomic():
        Blob.objects.bulk_create(
            [Blob(sha256=Blob.digest(script[1]), size=len(script[1]), content=script[1])], ignore_conflicts=True
        )
        created = Skill.objects.bulk_create(
            [Skill(name=f"bench-console-{i:04d}", source="user", latest_version=versions) for i in range(skills)]
        )
        rows = []
        for skill in created:
            index = int(skill.name.rsplit("-", 1)[1])
            for revision in range(1, versions + 1):
                text = skill_text(rng, index, revision)
                parsed = parse_skill_md(text)
                rows.append(
                    SkillVersion(
                        skill=skill,
                        number=revision,
                        skill_md=text,
                        body=parsed.body,
                        fingerprint=bundle_from_parts(text.encode(), [script]).fingerprint,
                        name=parsed.name,
                        description=parsed.description,
                        frontmatter=parsed.frontmatter,
                        tags=parsed.tags,
                        triggers=parsed.triggers,
                        tools=parsed.tools,
                        message=f"Revision {revision}",
                    )
                )
        SkillVersion.objects.bulk_create(rows, batch_size=1000)
        SkillFile.objects.bulk_create(
            [
                SkillFile(
                    version=v, path=script[0], blob_id=Blob.digest(script[1]), size=len(script[1]), executable=True
                )
                for v in rows
            ],
            batch_size=1000,
        )
        registry_changed()


def populate_audit_and_tokens(owner, skills: int, versions: int) -> None:
    """One audit row per version (what publishing writes) and 30 tokens of the bench author, so
    the audit and tokens pages read a log and a list of realistic size."""
    from datetime import timedelta

    from django.db import transaction
    from django.db.models import F
    from django.db.models.functions import Now

    from registry.models import ApiToken, AuditLog

    with transaction.atomic():
        if AuditLog.objects.filter(object_repr__startswith="bench-console-").count() < skills * versions:
            AuditLog.objects.bulk_create(
                [
                    AuditLog(
                        actor=owner,
                        via="console",
                        action="version.publish",
                        object_type="skill",
                        object_repr=f"bench-console-{index:04d}@user",
                        before={"version": revision - 1 or None},
                        after={"version": revision, "fingerprint": f"{index:032x}{revision:032x}"},
                    )
                    for index in range(skills)
                    for revision in range(1, versions + 1)
                ],
                batch_size=2000,
            )
            # auto_now_add gave the batch one timestamp; a real log has one write after another.
            AuditLog.objects.filter(object_repr__startswith="bench-console-").update(
                at=Now() - F("id") * timedelta(minutes=1)
            )
        ApiToken.objects.bulk_create(
            [
                ApiToken(
                    name=f"bench-console-token-{n:02d}",
                    user=owner,
                    prefix="skr_bench",
                    secret_hash=ApiToken.hash_secret(f"bench-console-token-{n}"),
                    scopes=["skills:read"],
                )
                for n in range(30)
            ],
            ignore_conflicts=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--versions-per-skill", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    prepare_environment("console")
    setup_django()

    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client

    from registry.models import Skill, SkillVersion
    from tests.factories import UserFactory

    started = time.perf_counter()
    populate(args.skills, args.versions_per_skill)
    print(
        f"database: {connection.vendor}; {Skill.objects.count()} skills, {SkillVersion.objects.count()} versions "
        f"(set up in {time.perf_counter() - started:.1f}s)"
    )

    author = UserFactory(username="bench-author")
    author.groups.add(Group.objects.get(name="author"))
    populate_audit_and_tokens(author, args.skills, args.versions_per_skill)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(author)
    name = f"bench-console-{args.skills // 2:04d}"
    edited = skill_text(random.Random(3), args.skills // 2, 99)

    measure_pages(client, name, edited, args.repeat)


def measure_pages(client, name: str, edited: str, repeat: int) -> None:
    """Every page case, warmed, then the skill list right after a publish, then each case timed."""
    from django.db import transaction

    from registry.services.generation import registry_changed

    def get(url: str, **headers):
        def call():
            response = client.get(url, headers=headers)
            assert response.status_code == 200, (url, response.status_code)

        return call

    keystrokes = iter(range(10**9))

    def live(fragment: str, marker: bytes):
        def call():
            # A different text each time, as when typing (nothing is served from a cache).
            form = {"skill_md": f"{edited}\nTyped {next(keystrokes)}\n", "base_version": "1", "check": fragment}
            response = client.post(f"/skills/{name}/edit/", form, headers={"HX-Request": "true"})
            assert response.status_code == 200 and marker in response.content

        return call

    def after_a_write(call):
        def measured():
            with transaction.atomic():
                registry_changed(skill=name)  # what a publish of `name` records: the catalogue moves forward
            started = time.perf_counter()
            call()
            return (time.perf_counter() - started) * 1000

        return measured

    cases = [
        ("bare Django view (baseline)", get("/bench/bare-page/"), None),
        ("skills list, page 1", get("/skills/"), 50),
        ("skills list, search fragment (htmx)", get("/skills/?q=sql+report", **{"HX-Request": "true"}), 50),
        ("skill page", get(f"/skills/{name}/"), 50),
        ("editor", get(f"/skills/{name}/edit/"), 50),
        ("live validation round trip (problems by line)", live("problems", b'id="problems"'), 30),
        ("live preview round trip (rendered body, tokens, prompt entry)", live("preview", b"Rendered body"), None),
        ("versions page", get(f"/skills/{name}/versions/"), None),
        ("tokens page (30 tokens)", get("/tokens/"), None),
        ("audit log, page 1", get("/audit/"), None),
        (
            "audit log filtered by object, fragment (htmx)",
            get(f"/audit/?object={name}", **{"HX-Request": "true"}),
            None,
        ),
    ]
    for _, call, _ in cases:  # warm caches, connections and the template loader
        for _ in range(3):
            call()
    moved = [after_a_write(get("/skills/"))() for _ in range(max(5, repeat // 10))]
    print(f"  skills list right after a publish (catalogue moved forward): {describe(moved)}")
    report(cases, repeat)


def report(cases, repeat: int) -> None:
    """Time each case `repeat` times and print its figures beside the first (the bare view)."""
    bare_p50 = None
    for title, call, target in cases:
        cpu: list[float] = []

        def with_cpu(call=call, cpu=cpu):
            started = time.process_time()
            call()
            cpu.append((time.process_time() - started) * 1000)

        samples = timed(with_cpu, repeat)
        p50 = percentile(samples, 50)
        bare_p50 = bare_p50 or p50
        verdict = ""
        if target is not None:
            verdict = f" - target p50 <= {target} ms: {'met' if p50 <= target else 'MISSED'}"
        # Wall time swings with the machine's load; this process's CPU time and the ratio to
        # the bare view measured alongside say more on a shared machine.
        print(
            f"  {title}: {describe(samples)}; CPU p50 {percentile(cpu, 50):.1f} ms; "
            f"{p50 / bare_p50:.1f}x the bare view{verdict}"
        )


if __name__ == "__main__":
    main()
