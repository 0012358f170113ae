"""The scanner's process: `python -m registry.scanning.engine [--llm-model M]`.

It builds the scanner once, prints one JSON line describing it (version, rule-pack digest,
analyzers), then reads one JSON line per scan from stdin (`{"path": folder}`) and answers each
with one JSON line: `{"findings": [...], "failed": [...]}` or `{"error": reason}`. The parent
(registry/scanning/runner.py) owns the timeout; this process only scans.

Offline analyzers only unless --llm-model is given: the static YAML/YARA rules, the bytecode
check, the pipeline-taint and correlation analyzers (the scanner's core set) and the AST/dataflow
(behavioral) analyzer.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import skill_scanner
from skill_scanner.core.analyzer_factory import build_analyzers
from skill_scanner.core.scan_policy import ScanPolicy
from skill_scanner.core.scanner import SkillScanner

from registry.scanning.identity import rulepack_digest

EXCERPT_MAX = 2000


def build(llm_model: str | None) -> SkillScanner:
    policy = ScanPolicy.default()
    analyzers = build_analyzers(
        policy,
        use_behavioral=True,
        use_llm=bool(llm_model),
        llm_model=llm_model or None,
        llm_api_key=os.environ.get("SCAN_LLM_API_KEY") or None,
        llm_base_url=os.environ.get("SCAN_LLM_API_BASE") or None,
    )
    return SkillScanner(analyzers=analyzers, policy=policy)


def _relative(path: str | None, root: Path) -> str:
    if not path:
        return ""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def _located(line: int | None, snippet: str, lines: list[str] | None) -> int | None:
    """The line the snippet is on. Some rules count SKILL.md's lines from the end of its
    frontmatter: when the reported line does not hold the snippet, the first line that does wins."""
    first = next((part.strip() for part in snippet.splitlines() if part.strip()), "")
    if not first or lines is None:
        return line
    if line is not None and 0 < line <= len(lines) and first in lines[line - 1]:
        return line
    return next((number for number, text in enumerate(lines, 1) if first in text), line)


def _text(folder: Path, relative: str, cache: dict[str, list[str] | None]) -> list[str] | None:
    if relative not in cache:
        try:
            cache[relative] = (folder / relative).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError, ValueError):
            cache[relative] = None
    return cache[relative]


def scan(scanner: SkillScanner, folder: Path) -> dict[str, Any]:
    result = scanner.scan_skill(folder, lenient=True)
    texts: dict[str, list[str] | None] = {}
    findings = []
    for finding in result.findings:
        relative = _relative(finding.file_path, folder)
        snippet = finding.snippet or ""
        line = finding.line_number
        if relative and snippet and not relative.startswith("/"):
            line = _located(line, snippet, _text(folder, relative, texts))
        findings.append(
            {
                "analyzer": finding.analyzer or "",
                "rule_id": finding.rule_id,
                "severity": finding.severity.value,
                "category": finding.category.value,
                "title": finding.title,
                "file": relative,
                "line": line,
                "excerpt": snippet[:EXCERPT_MAX],
                "explanation": finding.description,
            }
        )
    return {"findings": findings, "failed": result.analyzers_failed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm-model", default="")
    parser.add_argument("--nice", type=int, default=0, help="Lower this process's CPU priority by this much.")
    args = parser.parse_args()
    # The scanner logs to stderr, which the parent drains; stdout carries only the protocol.
    if args.nice:
        os.nice(args.nice)
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    protocol = sys.stdout
    sys.stdout = sys.stderr
    scanner = build(args.llm_model)
    hello = {
        "scanner_version": skill_scanner.__version__,
        "rulepack_digest": rulepack_digest(),
        "analyzers": scanner.list_analyzers(),
    }
    protocol.write(json.dumps(hello) + "\n")
    protocol.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = scan(scanner, Path(request["path"]))
        except Exception as exc:  # any failure of the scanner is the scan's error, reported
            answer = {"error": f"the scanner failed: {type(exc).__name__}: {exc}"[:2000]}
        protocol.write(json.dumps(answer, default=str) + "\n")
        protocol.flush()


if __name__ == "__main__":
    main()
