"""The reviewer against the claim ledger: Silva's own paper draws no finding (numbers are matched to
the values its macros print), and a planted false sentence or an inverted conclusion is caught with
the sentence and the claim. Before the ledger both passed and every paper drew 9 number findings.
Papers are written as LaTeX only (no compile): the check reads the source with results.tex expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.claims import LiteratureRecord
from review import ReviewConfig
from review.integrity import run_checks
from review.paper import resolve
from tests.writeup.support import make_run
from writeup.config import WriteupConfig
from writeup.offline import report
from writeup.paper import open_paper

CFG = ReviewConfig(page_limit=9)


@pytest.fixture
def paper_dir(tmp_path: Path) -> Path:
    paper = open_paper(make_run(tmp_path), None, WriteupConfig(), sandbox="none")
    (paper.dir / "results.tex").write_text(paper.macros.tex())
    (paper.dir / "paper.tex").write_text(report(paper.run, paper.idea, paper.macros, [], "workshop"))
    (paper.dir / "references.bib").write_text("")
    return paper.dir


def _findings(paper_dir: Path) -> dict[str, list[str]]:
    (paper,) = resolve(paper_dir)
    return {c.name: [f.message + " @ " + f.where for f in c.findings] for c in run_checks(paper, CFG).checks}


def _plant(paper_dir: Path, old: str, new: str) -> None:
    tex = (paper_dir / "paper.tex").read_text()
    assert old in tex
    (paper_dir / "paper.tex").write_text(tex.replace(old, new, 1))


def test_silvas_own_paper_has_no_number_or_claim_finding(paper_dir: Path) -> None:
    found = _findings(paper_dir)
    assert found["numbers"] == [] and found["unsupported_claims"] == []


def test_report_says_which_layers_ran_and_the_abbreviations_defined(paper_dir: Path) -> None:
    _plant(
        paper_dir,
        "\\section{Limitations}",
        "We study sparse random features (SRF).\n\\section{Limitations}",
    )
    (paper,) = resolve(paper_dir)
    detail = run_checks(paper, CFG).check("unsupported_claims").detail
    assert "the deterministic reading only (no model extraction)" in detail
    assert "SRF = method (best of tuning)" in detail


def test_planted_false_sentence_is_caught(paper_dir: Path) -> None:
    # The method is significantly better on accuracy; on fit time it is significantly worse.
    _plant(
        paper_dir,
        "\\section{Limitations}",
        "\\section{Limitations}\nOn fit\\_time\\_s, \\TuningGroupA{} significantly outperforms "
        "\\TuningGroupB{}.",
    )
    found = _findings(paper_dir)["unsupported_claims"]
    assert len(found) == 1
    assert "states 'better' but the claim's verdict is 'worse'" in found[0]
    assert "significantly outperforms" in found[0] and "claim tuning-AvsB-fit-time-s" in found[0]


def test_inverted_conclusion_is_caught(paper_dir: Path) -> None:
    # The two groups' means swapped in the abstract's sentence.
    tex = (paper_dir / "paper.tex").read_text()
    abstract = tex.split("\\begin{abstract}")[1].split("\\end{abstract}")[0]
    swapped = (
        abstract.replace("\\MainMethodMean", "@@")
        .replace("\\MainBaselineMean", "\\MainMethodMean")
        .replace("@@", "\\MainBaselineMean")
    )
    _plant(paper_dir, abstract, swapped)
    found = _findings(paper_dir)["unsupported_claims"]
    assert len(found) == 1 and "gives each group the other group's mean" in found[0]


def test_significance_at_p_over_alpha_and_selection_metric_as_test(paper_dir: Path) -> None:
    _plant(paper_dir, "On accuracy, ", "On accuracy (held-out test), ")
    found = _findings(paper_dir)["unsupported_claims"]
    assert any("the metric the search selected on, as a held-out test" in f for f in found)


def test_paper_without_ledger_gets_the_weaker_check_and_says_so(paper_dir: Path) -> None:
    (paper_dir / "ledger.json").unlink()
    (paper,) = resolve(paper_dir)
    check = run_checks(paper, CFG).check("unsupported_claims")
    assert "no ledger.json beside the paper" in check.detail and "weaker check" in check.detail


def test_appendix_is_claim_checked(paper_dir: Path) -> None:
    # After \label{silvabodyend}: the method is significantly better on accuracy, not worse.
    _plant(
        paper_dir,
        "\\label{silvabodyend}",
        "\\label{silvabodyend}\n\\section{Extra}\nThe method trails the baseline on accuracy.",
    )
    found = _findings(paper_dir)["unsupported_claims"]
    assert any("trails the baseline" in f and "states 'worse'" in f for f in found)


def test_bib_entry_the_literature_search_did_not_return_is_a_finding(paper_dir: Path) -> None:
    (paper_dir / "references.bib").write_text(
        "@article{moreau2024noisy,\n  title = {Noisy},\n  year = {2024}\n}\n"
    )
    _plant(paper_dir, "\\section{Limitations}", "See \\cite{moreau2024noisy}.\n\\section{Limitations}")
    _plant(paper_dir, "\\end{document}", "\\bibliography{references}\n\\end{document}")
    found = _findings(paper_dir)["references"]
    assert len(found) == 1 and "'moreau2024noisy' was not found by the literature search" in found[0]
    LiteratureRecord(entries={"moreau2024noisy": "s2:123"}).write(paper_dir)
    assert _findings(paper_dir)["references"] == []
