"""Numbers in the paper that match no artifact of the run.

Every number in a manuscript must come from a results artifact (docs/architecture.md, "Invariants"). The pool
of legitimate values: metrics and parameters of the run's nodes (the journal), every number in
the attempts' results.json and aggregate.json files, the values the writeup's results.tex macros
print and its claim ledger (ledger.json). A decimal
number in the paper's text matches when some value rounds to it at the precision printed, or
its hundredfold does (a percentage). Integers are left alone: they count seeds, pages, sections.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.claimnumbers import changes
from engine.claims import LEDGER_FILE, load_ledger
from engine.journal import Journal
from review.integrity.report import CheckResult, Finding
from review.integrity.source import RESULTS_FILE, macro_numbers, reading_text, results_macros
from review.paper import REFERENCES_HEADING, Paper

# A decimal at any position, a full stop after it too ("... reached 0.93.").
_NUMBER = re.compile(r"(?<![\w.])[-\u2212]?(\d+\.\d+)(?![\w]|\.\d)")
_ARXIV = re.compile(r"\d{4}\.\d{4,5}")
_NOT_RESULT = re.compile(
    r"(?:§|\b(?:Section|Sec\.|Figure|Fig\.|Table|Tab\.|Eq\.|Equation|Appendix|Algorithm|Theorem"
    r"|Lemma|Definition|Proposition|Corollary|version|v))\s*\(?$"
    r"|[<>\u2264\u2265]\s*$",
    re.IGNORECASE,
)  # a threshold (p < 0.05) is not a result
_APPENDIX = re.compile(r"^\s*(?:[A-Z]\s+)?Appendix\b|^\s*A\s+[A-Z][a-z]", re.MULTILINE)
MAX_FINDINGS = 50


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)


def _json_numbers(path: Path) -> list[float]:
    try:
        return list(_numbers(json.loads(path.read_text())))
    except (OSError, ValueError):
        return []  # a damaged artifact holds no legitimate numbers


def artifact_values(paper: Paper) -> tuple[list[float], list[str]]:
    """Sorted values the paper may print, and a description of where they came from."""
    values: list[float] = []
    sources: list[str] = []
    macros = results_macros(paper.out_dir)
    if macros:  # the values the paper's macros print (numbers.json holds their names, not values)
        values += macro_numbers(macros)
        sources.append(f"{len(macros)} macro(s) of {RESULTS_FILE}")
    ledger = load_ledger(paper.out_dir)
    if ledger is not None:
        values += _json_numbers(paper.out_dir / LEDGER_FILE)
        # A change between two groups may be printed relative (8% higher), in points or as a ratio.
        values += [v for c in ledger.claims for vs in changes(c).values() for v in vs]
        sources.append(LEDGER_FILE)
    if paper.run_dir is not None:
        files = [
            *paper.run_dir.glob("nodes/*/attempt-*/results.json"),
            *paper.run_dir.glob("nodes/*/attempt-*/aggregate.json"),
        ]
        for f in files:
            values += _json_numbers(f)
        journal = Journal.open(paper.run_dir, read_only=True)
        try:
            for node in journal:
                values += [m.value for m in node.metrics if math.isfinite(m.value)]
                values += list(_numbers(node.params))
        finally:
            journal.log.close()
        sources.append(
            f"{len(journal.nodes)} node(s) of the journal and {len(files)} results/aggregate file(s)"
        )
    return sorted(values + [-v for v in values if v < 0]), sources  # a difference printed unsigned


def main_text(text: str) -> str:
    """The text without its reference list (an appendix after the references is kept)."""
    refs = REFERENCES_HEADING.search(text)
    if refs is None:
        return text
    appendix = _APPENDIX.search(text, refs.end())
    return text[: refs.start()] + (text[appendix.start() :] if appendix else "")


def _matches(x: float, decimals: int, pool: list[float]) -> bool:
    """Some pooled value rounds to x at this precision, or to x percent."""
    half = 0.5 * 10.0**-decimals + 1e-9
    for target, tol in ((x, half), (x / 100.0, half / 100.0)):
        i = bisect.bisect_left(pool, target - tol)
        if i < len(pool) and pool[i] <= target + tol:
            return True
    return False


def unmatched_numbers(paper: Paper) -> CheckResult:
    name = "numbers"
    pool, sources = artifact_values(paper)
    if not sources:
        return CheckResult.skipped(name, f"no run directory and no {RESULTS_FILE} beside the paper")
    # Without a PDF, a Silva paper is read from its source with results.tex expanded.
    pages = paper.pages or [reading_text(paper)[0]]
    findings: list[Finding] = []
    seen: set[str] = set()
    checked = 0
    text = main_text("\f".join(pages))
    for m in _NUMBER.finditer(text):
        literal = m.group(0).replace("\u2212", "-")
        before = text[max(0, m.start() - 14) : m.start()]
        if _ARXIV.fullmatch(m.group(1)) or _NOT_RESULT.search(before):
            continue
        checked += 1
        value, decimals = float(literal), len(m.group(1).partition(".")[2])
        # A signed value may be printed without its sign ("reduces the loss by 0.12").
        if literal in seen or any(_matches(v, decimals, pool) for v in {value, abs(value)}):
            continue
        seen.add(literal)
        page = text.count("\f", 0, m.start()) + 1
        context = " ".join(text[max(0, m.start() - 40) : m.end() + 40].split())
        findings.append(
            Finding(message=f"{literal} matches no artifact value: ...{context}...", where=f"page {page}")
        )
    detail = f"{checked} decimal number(s) against {len(pool)} value(s) from {', '.join(sources)}"
    return CheckResult.of(name, findings[:MAX_FINDINGS], detail)
