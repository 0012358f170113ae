"""System-prompt tokens: the lazy skills block (names + descriptions) vs every SKILL.md body inlined.

    .venv/bin/python bench/prompt_tokens.py [--corpus ../shared/corpus]

Reads the real-world skills in shared/corpus (as tests/registry/test_corpus.py does), renders the
lazy block with the registry's own `render_prompt_block` (default budgets: MAX_PROMPT_CHARS and
MAX_SKILLS_IN_PROMPT, and unbounded), and an eager variant: the same list with each skill's full
SKILL.md body inside its entry. Each block is also put through the runtime's
`build_system_prompt` (with the default tool set) to count the whole system prompt. Tokens are
counted with registry.skillformat.token_count (tiktoken cl100k_base). SPEC sets no number; the verdict checks
the lazy block holds its character budget and is smaller than the inlined one. Needs no database.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, prepare_environment  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
UNBOUNDED = 10**9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        raise SystemExit(f"the skill corpus is missing: {args.corpus}")
    var = prepare_environment("prompt-tokens")
    import django

    django.setup()  # settings only (budgets); nothing here touches the database
    from django.conf import settings

    from agents.runtime.builtin_tools import default_tool_registry
    from agents.runtime.prompt import build_system_prompt
    from registry.selectors.resolve import SKILLS_INSTRUCTION, _skill_xml, render_prompt_block
    from registry.skillformat.bundle import find_skill_folders, read_folder
    from registry.skillformat.skillmd import parse_skill_md
    from registry.skillformat.token_count import count_tokens

    skills: dict[str, tuple[str, str]] = {}  # name -> (description, body); first folder wins, as one registry name
    hidden = 0
    folders = find_skill_folders(args.corpus)
    for folder in folders:
        parsed = parse_skill_md(read_folder(folder).skill_md, folder_name=folder.name)
        if parsed.disable_model_invocation:
            hidden += 1  # resolve() never lists these unless forced
            continue
        skills.setdefault(parsed.name, (parsed.description, parsed.body))
    listed = [_Listed(name, description) for name, (description, _) in sorted(skills.items())]

    lazy_default = render_prompt_block(listed)
    lazy_unbounded = render_prompt_block(listed, max_skills=UNBOUNDED, max_chars=UNBOUNDED)
    # The eager variant: the same list and frame, each entry carrying its whole SKILL.md body.
    entries = [
        _skill_xml(name, description).removesuffix("</skill>") + f"  <content>\n{body.strip()}\n  </content>\n</skill>"
        for name, (description, body) in sorted(skills.items())
    ]
    inlined = "\n".join([SKILLS_INSTRUCTION, "<available_skills>", *entries, "</available_skills>"])

    tools = default_tool_registry()

    def system_prompt(block: str) -> str:
        return build_system_prompt(
            base_prompt=None,
            memory=None,
            forced=None,
            tool_lines=[(tool.name, tool.summary) for tool in tools],
            skills_block=block,
            loaded=[],
            suggestion=None,
            workspace=Path("/workspace"),
            today=date(2025, 1, 1),
            language=None,
            instructions=(),
            reminder_tools=[],
        ).text

    base_tokens = count_tokens(system_prompt(""))
    body_chars = sum(len(body) for _, body in skills.values())
    print(
        f"corpus: {args.corpus} - {len(folders)} skill folders, {len(skills)} listed skills "
        f"({hidden} hidden by disable-model-invocation, {len(folders) - hidden - len(skills)} duplicate names); "
        f"{body_chars:,} chars of SKILL.md bodies; tokenizer cl100k_base"
    )
    print(f"  system prompt without a skills block: {base_tokens:,} tokens")
    rows = [
        (
            f"lazy, default budget ({settings.MAX_PROMPT_CHARS:,} chars / {settings.MAX_SKILLS_IN_PROMPT} skills)",
            lazy_default.text,
            f"{len(lazy_default.included)} of {lazy_default.total} listed, {len(lazy_default.described)} described",
        ),
        ("lazy, unbounded", lazy_unbounded.text, f"{len(lazy_unbounded.included)} listed, all described"),
        ("every SKILL.md body inlined", inlined, f"{len(skills)} bodies"),
    ]
    figures = {}
    for label, block, note in rows:
        block_tokens = count_tokens(block)
        prompt_tokens = count_tokens(system_prompt(block))
        figures[label] = prompt_tokens
        print(
            f"  {label}: block {len(block):,} chars, {block_tokens:,} tokens; "
            f"system prompt {prompt_tokens:,} tokens ({note})"
        )
    inlined_tokens = figures["every SKILL.md body inlined"]
    default_tokens, unbounded_tokens = (figures[label] for label, _, _ in rows[:2])
    print(
        f"  ratio inlined / lazy: {inlined_tokens / default_tokens:.1f}x (default budget), "
        f"{inlined_tokens / unbounded_tokens:.1f}x (unbounded); the lazy prompt is "
        f"{default_tokens / inlined_tokens:.1%} / {unbounded_tokens / inlined_tokens:.1%} of the inlined one"
    )
    # SPEC §4 sets no token number: the promise (seed 003) is a lazy block much smaller than the
    # bodies, held within the character budget.
    within = len(lazy_default.text) <= settings.MAX_PROMPT_CHARS
    verdict = "met" if within and default_tokens < inlined_tokens else "MISSED"
    print(
        f"  verdict: lazy block within {settings.MAX_PROMPT_CHARS:,} chars and smaller than the inlined bodies - "
        f"{verdict} ({default_tokens:,} vs {inlined_tokens:,} system-prompt tokens; no numeric target in SPEC)"
    )
    shutil.rmtree(var, ignore_errors=True)


class _Listed:
    """What render_prompt_block reads from a skill: its name and description."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description


if __name__ == "__main__":
    main()
