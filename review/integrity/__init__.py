"""Integrity checks that need no LLM (the claims check's model layer, when enabled, aside): every
one reads the paper (PDF, LaTeX source and log) and, when the paper belongs to a run, the run's
artifacts. A check that cannot run says why."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from engine.llm import LLM
from review.config import ReviewConfig
from review.integrity.claims import claims_check
from review.integrity.figures import duplicate_figures, figure_size, unreferenced_figures
from review.integrity.latex import overfull_boxes, page_limit, undefined_references
from review.integrity.numbers import unmatched_numbers
from review.integrity.references import unsearched_references
from review.integrity.report import CheckResult, Finding, IntegrityReport
from review.paper import Paper


def run_checks(paper: Paper, cfg: ReviewConfig, llm: LLM | None = None) -> IntegrityReport:
    """Every check; the claims check's model layer only where `cfg.llm_claims` and a model."""
    model = llm if cfg.llm_claims else None
    checks: list[tuple[str, Callable[[], CheckResult]]] = [
        ("numbers", lambda: unmatched_numbers(paper)),
        ("duplicate_figures", lambda: duplicate_figures(paper)),
        ("unreferenced_figures", lambda: unreferenced_figures(paper)),
        ("undefined_references", lambda: undefined_references(paper)),
        ("overfull_boxes", lambda: overfull_boxes(paper)),
        ("page_limit", lambda: page_limit(paper, cfg.page_limit)),
        ("unsupported_claims", lambda: claims_check(paper, model)),
        ("references", lambda: unsearched_references(paper)),
        ("figure_size", lambda: figure_size(paper, cfg.text_width_in, cfg.min_figure_font_pt)),
    ]
    results = []
    for name, check in checks:
        try:
            results.append(check())
        except (subprocess.SubprocessError, OSError, ValueError) as exc:
            # A damaged figure or an odd PDF stops that check, never the review.
            results.append(CheckResult.skipped(name, f"could not run: {exc}"))
    return IntegrityReport(checks=results)


__all__ = ["run_checks", "IntegrityReport", "CheckResult", "Finding"]
