"""The claims check's model layer (review.llm_claims) with a scripted model: a false comparison the
deterministic reader misses is found from the model's record, an honest one is not flagged, a
malformed answer leaves the deterministic findings intact and says the layer failed, and the layer
never runs unless the review section enables it. The paper is Silva's offline report (LaTeX only):
its ledger says sparse random features are significantly better than the baseline on accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.llm import LLM
from engine.llm.providers.base import ProviderCall
from review import ReviewConfig, review_paper
from review.integrity import CheckResult, run_checks
from review.integrity.llmclaims import MAX_PART_CHARS
from review.paper import paragraph_chunks, resolve
from tests.review.conftest import LLMFactory
from tests.review.papers import scripted_reviewer
from tests.writeup.support import make_run
from writeup.config import WriteupConfig
from writeup.offline import report
from writeup.paper import open_paper

ON = ReviewConfig(page_limit=9, llm_claims=True)
OFF = ReviewConfig(page_limit=9)
# No comparison word the reader knows: the deterministic layer reads no direction in it.
FALSE = "For accuracy, a practitioner would pick the baseline over sparse random features."
HONEST = "For accuracy, a practitioner would pick sparse random features over the baseline."


@pytest.fixture
def paper_dir(tmp_path: Path) -> Path:
    paper = open_paper(make_run(tmp_path), None, WriteupConfig(), sandbox="none")
    (paper.dir / "results.tex").write_text(paper.macros.tex())
    (paper.dir / "paper.tex").write_text(report(paper.run, paper.idea, paper.macros, [], "workshop"))
    (paper.dir / "references.bib").write_text("")
    return paper.dir


def _plant(paper_dir: Path, sentence: str) -> None:
    tex = (paper_dir / "paper.tex").read_text()
    (paper_dir / "paper.tex").write_text(
        tex.replace("\\section{Limitations}", sentence + "\n\\section{Limitations}")
    )


def _record(first: str, second: str, quote: str) -> str:
    statement = {
        "quote": quote,
        "first": first,
        "second": second,
        "metric": "accuracy",
        "direction": "better",
    }
    return json.dumps({"statements": [statement]})


def _claims(paper_dir: Path, cfg: ReviewConfig, llm: LLM | None = None) -> CheckResult:
    (paper,) = resolve(paper_dir)
    return run_checks(paper, cfg, llm).check("unsupported_claims")


def test_false_comparison_the_reader_misses_is_found_from_the_models_record(
    paper_dir: Path, make_llm: LLMFactory
) -> None:
    _plant(paper_dir, FALSE)
    assert _claims(paper_dir, OFF).findings == []  # the deterministic reader alone misses it
    llm, provider = make_llm(
        lambda call: _record("the baseline", "sparse random features", FALSE), price=15.0
    )
    check = _claims(paper_dir, ON, llm)
    (finding,) = check.findings
    assert finding.message.startswith("model layer:") and FALSE in finding.message
    assert "states 'worse'" in finding.message and "tuning-AvsB-accuracy" in finding.where
    assert "the model's extraction (1 statement(s) from 1 part(s), 1 tied to a claim; 1 call(s), $0.0" in (
        check.detail
    )
    assert "$0.0000" not in check.detail  # a priced model's calls are counted in dollars
    assert len(provider.calls) == 1 and provider.calls[0].context["review"] == "claims"


def test_honest_comparison_from_the_models_record_is_not_flagged(
    paper_dir: Path, make_llm: LLMFactory
) -> None:
    _plant(paper_dir, HONEST)
    llm, _ = make_llm(lambda call: _record("sparse random features", "the baseline", HONEST))
    check = _claims(paper_dir, ON, llm)
    assert check.findings == [] and "1 tied to a claim" in check.detail


def test_malformed_answer_keeps_the_deterministic_findings_and_says_the_layer_failed(
    paper_dir: Path, make_llm: LLMFactory
) -> None:
    _plant(paper_dir, "On accuracy, the baseline outperforms sparse random features.")
    deterministic = _claims(paper_dir, OFF).findings
    assert deterministic  # the reader catches this one itself

    def malformed(call: ProviderCall) -> str:
        return '{"statements": [{"quote": "cut off'

    llm, provider = make_llm(malformed)
    check = _claims(paper_dir, ON, llm)
    assert check.findings == deterministic
    assert "the model's extraction FAILED" in check.detail and "its findings are missing" in check.detail
    assert len(provider.calls) == 3  # the answer and its two re-asks, all counted
    assert "3 call(s)" in check.detail


def test_model_layer_never_runs_unless_the_review_section_enables_it(
    paper_dir: Path, make_llm: LLMFactory
) -> None:
    _plant(paper_dir, FALSE)
    llm, provider = make_llm(lambda call: _record("the baseline", "sparse random features", FALSE))
    check = _claims(paper_dir, OFF, llm)
    assert provider.calls == [] and check.findings == []
    assert "the deterministic reading only (no model extraction)" in check.detail


def test_a_long_paper_is_read_in_parts_that_fit_the_model() -> None:
    text = "\n\n".join(["A" * 4000, "B" * 1500, "C" * 14000])
    parts = paragraph_chunks(text, MAX_PART_CHARS)
    assert [len(p) for p in parts] == [5502, 6000, 6000, 2000]
    assert "".join(parts).replace("\n", "") == text.replace("\n", "")


def test_the_reviewers_model_runs_the_layer_in_a_review(paper_dir: Path, make_llm: LLMFactory) -> None:
    _plant(paper_dir, FALSE)

    def model(call: ProviderCall) -> str:
        if call.context.get("review") == "claims":
            return _record("the baseline", "sparse random features", FALSE)
        return scripted_reviewer(call)

    llm, _ = make_llm(model)
    result = review_paper(paper_dir, llm, ReviewConfig(reviews=1, page_limit=None, llm_claims=True))
    check = result.integrity.check("unsupported_claims")
    assert any(f.message.startswith("model layer:") for f in check.findings)
