"""References a Silva paper may hold: only the entries its writer's literature search returned
(literature.json beside the paper, written by the LLM writer; none when no search ran). Any other
.bib entry is a finding. A paper not written by Silva (no ledger.json) has no such record: the
check says so and does not run."""

from __future__ import annotations

from engine.claims import LITERATURE_FILE, load_ledger, load_literature
from review.integrity.latex import Source
from review.integrity.report import CheckResult, Finding
from review.paper import Paper


def unsearched_references(paper: Paper) -> CheckResult:
    name = "references"
    if load_ledger(paper.out_dir) is None:
        return CheckResult.skipped(
            name, "not written by Silva (no ledger.json): no record of a literature search"
        )
    src = Source.of(paper)
    if src is None:
        return CheckResult.skipped(name, "no LaTeX source to read the bibliography from")
    bib = src.bib_keys()
    if bib is None:
        return CheckResult.skipped(name, "the .bib file the source names is missing")
    record = load_literature(paper.out_dir).entries
    findings = [
        Finding(
            message=f"reference {key!r} was not found by the literature search "
            f"({len(record)} entr{'y' if len(record) == 1 else 'ies'} recorded in {LITERATURE_FILE})",
            where=f"references.bib: {key}",
        )
        for key in sorted(bib - set(record))
    ]
    return CheckResult.of(
        name, findings, f"{len(bib)} .bib entr{'y' if len(bib) == 1 else 'ies'} against {LITERATURE_FILE}"
    )
