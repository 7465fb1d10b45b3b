"""Integrity checks catch planted defects and stay quiet on a clean paper."""

from __future__ import annotations

import shutil
from pathlib import Path

from review import ReviewConfig
from review.integrity import run_checks
from review.paper import Paper, resolve

CFG = ReviewConfig(page_limit=2)


def _by_check(paper: Paper) -> dict[str, list[str]]:
    report = run_checks(paper, CFG)
    return {c.name: [f.message + " @ " + f.where for f in c.findings] for c in report.checks}


def test_planted_defects_are_caught(run_dir: Path) -> None:
    (paper,) = resolve(run_dir / "paper" / "bad")
    assert paper.run_dir == run_dir.resolve() or paper.run_dir == run_dir
    found = _by_check(paper)
    assert any(
        "'figures/curve.png' and 'figures/curve_again.png' are the same" in f
        for f in found["duplicate_figures"]
    )
    assert [f.split(" matches")[0] for f in found["numbers"]] == [
        "0.937"
    ]  # 0.920, 0.850, 92.0%, 0.1 all trace
    assert any("citation 'ghost2024'" in f for f in found["undefined_references"])
    assert any("over the 2-page limit" in f for f in found["page_limit"])
    assert any("fig:tiny" in f for f in found["unreferenced_figures"])
    assert any("figures/tiny.png" in f for f in found["figure_size"])
    assert any("too wide" in f for f in found["overfull_boxes"])


def test_clean_paper_has_no_findings(run_dir: Path) -> None:
    (paper,) = resolve(run_dir / "paper" / "good" / "paper.pdf")
    report = run_checks(paper, CFG)
    assert {c.name: c.status for c in report.checks} == {
        **{
            name: "ok"
            for name in (
                "numbers",
                "duplicate_figures",
                "unreferenced_figures",
                "undefined_references",
                "overfull_boxes",
                "page_limit",
                "unsupported_claims",
                "figure_size",
            )
        },
        "references": "skipped",  # not written by Silva: no record of a literature search
    }


def test_pdf_alone_is_checked_from_its_text_and_embedded_images(run_dir: Path, tmp_path: Path) -> None:
    shutil.copy(run_dir / "paper" / "bad" / "paper.pdf", tmp_path / "submission.pdf")
    (paper,) = resolve(tmp_path / "submission.pdf")
    assert paper.tex is None and paper.run_dir is None
    report = run_checks(paper, CFG)
    assert report.check("numbers").status == "skipped" and report.check("overfull_boxes").status == "skipped"
    assert [f.where for f in report.check("duplicate_figures").findings] == [
        "image 0 on page 1, image 4 on page 2"
    ]
    assert [f.where for f in report.check("undefined_references").findings] == ["page 2"]  # the [?] marker
    assert report.check("page_limit").status == "findings"
    assert [f.where for f in report.check("unreferenced_figures").findings] == ["Figure 4"]


def test_claim_without_a_significant_replicated_comparison(run_dir: Path) -> None:
    agg = next(run_dir.glob("nodes/*/attempt-1/aggregate.json"))
    agg.write_text(agg.read_text().replace("0.91", "0.84").replace("0.92", "0.85").replace("0.93", "0.86"))
    (paper,) = resolve(run_dir / "paper" / "good")
    check = run_checks(paper, CFG).check("unsupported_claims")
    assert (
        check.status == "findings"
        and "no replicated comparison in the run is significant" in check.findings[0].message
    )


def test_latex_directory_without_pdf_is_read_from_source(tmp_path: Path) -> None:
    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\\title{T}\\begin{document}Our method outperforms the baseline~\\cite{x}.\n"
        "\\bibliography{refs}\\end{document}\n"
    )
    (paper,) = resolve(tmp_path)
    assert paper.pdf is None and paper.title == "T"
    report = run_checks(paper, CFG)
    assert (
        "the .bib file named by \\bibliography is missing"
        in report.check("undefined_references").findings[0].message
    )
    assert "no statistical test" in report.check("unsupported_claims").findings[0].message
    assert report.check("page_limit").status == "skipped"
