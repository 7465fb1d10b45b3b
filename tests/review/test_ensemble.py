"""The reviewer ensemble and the area chair end to end on compiled papers, with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from engine import events as ev
from engine.executor import InProcessExecutor
from engine.journal import Journal
from engine.llm import LLM, summarize
from engine.llm.prompt_budget import PromptBudget
from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import last_user_text
from review import REVIEW_JSON, ReviewConfig, load_result, review_all, review_paper
from review.ensemble import ReviewJob, split_paper
from review.guidelines import GUIDELINES
from tests.review.conftest import LLMFactory
from tests.review.papers import scripted_reviewer


def test_ensemble_and_meta_review_end_to_end(run_dir: Path, make_llm: LLMFactory) -> None:
    llm, provider = make_llm(ledger_dir=run_dir)
    cfg = ReviewConfig(reviews=3, personas=["balanced", "skeptic"], reflection_rounds=1, page_limit=2)
    pdf = run_dir / "paper" / "good" / "paper.pdf"
    result = review_paper(pdf, llm, cfg, InProcessExecutor(4))

    assert [r.status for r in result.reviews] == ["ok", "ok", "ok"]
    assert [r.persona for r in result.reviews] == ["balanced", "skeptic", "balanced"]
    assert all(r.reflections == 1 and r.form and r.form.summary.startswith("Revised") for r in result.reviews)
    meta = result.meta_review
    assert meta is not None and meta.form is not None
    assert (meta.reviews_used, meta.reviews_failed, meta.accept_votes) == (3, 0, 2)
    assert abs(meta.aggregate["overall"].mean - 16 / 3) < 1e-9
    assert result.decision == "reject" and result.overall == 5.0
    # Three reviewers x (review + reflection) + one area chair, all accounted as the review role.
    assert len(provider.calls) == 7
    assert summarize(run_dir)["by_role"]["review"]["calls"] == 7
    assert GUIDELINES in provider.calls[0].messages[0].text
    assert "Filtering Noisy Labels" in provider.calls[0].messages[1].text  # the PDF's text is shown
    meta_prompt = last_user_text(provider.calls[-1].messages)
    assert "3 review(s)" in meta_prompt and "Integrity check findings:\n- none" in meta_prompt

    written = json.loads((pdf.parent / REVIEW_JSON).read_text())
    assert set(written) >= {"reviews", "meta_review", "integrity", "decision"}
    assert load_result(pdf.parent / REVIEW_JSON) == result
    assert {c["name"] for c in written["integrity"]["checks"]} >= {
        "numbers",
        "duplicate_figures",
        "page_limit",
    }
    md = (pdf.parent / "review.md").read_text()
    assert "## Meta-review (area chair)" in md and "Based on 3 review(s); 0 failed" in md


def test_malformed_review_is_reasked_then_recorded_failed(run_dir: Path, make_llm: LLMFactory) -> None:
    def fn(call: ProviderCall) -> str:
        if "skeptical reviewer" in call.messages[0].text:
            return "I would rather not fill in a form."  # never valid JSON
        return scripted_reviewer(call)

    llm, provider = make_llm(fn)
    cfg = ReviewConfig(reviews=3, personas=["balanced", "skeptic", "methodologist"], page_limit=2)
    result = review_paper(run_dir / "paper" / "good", llm, cfg, InProcessExecutor(3))

    skeptic_calls = [c for c in provider.calls if "skeptical reviewer" in c.messages[0].text]
    assert len(skeptic_calls) == 3  # the answer, then max_reasks=2 re-asks quoting the error
    assert "could not be used" in skeptic_calls[-1].messages[-1].text
    failed = result.reviews[1]
    assert failed.status == "failed" and failed.form is None and "did not validate" in failed.error
    assert [r.status for r in result.reviews] == ["ok", "failed", "ok"]
    meta = result.meta_review
    assert meta is not None and (meta.reviews_used, meta.reviews_failed) == (2, 1)
    assert "1 more review(s) failed" in last_user_text(provider.calls[-1].messages)
    assert result.decision == "reject"


def test_budget_spent_records_failed_reviews_and_no_meta_review(run_dir: Path, make_llm: LLMFactory) -> None:
    llm, provider = make_llm(dollars=0.0, price=1.0)
    result = review_paper(
        run_dir / "paper" / "good" / "paper.pdf", llm, ReviewConfig(reviews=2), InProcessExecutor(2)
    )
    assert provider.calls == []  # refused before any call is made
    assert all(r.status == "failed" and "budget" in r.error for r in result.reviews)
    assert result.meta_review is None and result.decision is None
    assert (run_dir / "paper" / "good" / REVIEW_JSON).is_file()


def test_forest_papers_are_reviewed_concurrently(run_dir: Path, make_llm: LLMFactory) -> None:
    # Answers take 2 s, more than a paper's integrity checks at a load of 10: reviews run together.
    llm, provider = make_llm(ledger_dir=run_dir, delay_s=2.0)
    journal = Journal.open(run_dir)
    results = review_all(
        run_dir, llm, ReviewConfig(reviews=2, page_limit=2), InProcessExecutor(8), journal=journal
    )
    journal.log.close()

    assert {r.idea for r in results} == {"good", "bad"}
    assert all((run_dir / "paper" / idea / REVIEW_JSON).is_file() for idea in ("good", "bad"))
    events = [e for e in Journal.open(run_dir, read_only=True).log.events if isinstance(e, ev.ReviewFinished)]
    assert len(events) == 6  # 2 reviews + 1 meta-review per paper
    spans = {
        idea: [(e.started_at, e.finished_at) for e in events if e.idea == idea and "-review-" in e.job]
        for idea in ("good", "bad")
    }
    # A review of one paper was in flight with one of the other: the papers were reviewed at once.
    assert any(max(a[0], b[0]) < min(a[1], b[1]) for a in spans["good"] for b in spans["bad"])
    bad = next(r for r in results if r.idea == "bad")
    assert bad.integrity.check("duplicate_figures").status == "findings"
    # The area chair of the defective paper is shown the integrity findings.
    meta_prompts = [last_user_text(c.messages) for c in provider.calls if c.context.get("review") == "meta"]
    assert sum("duplicate_figures: 'figures/curve.png'" in p for p in meta_prompts) == 1


def test_a_paper_longer_than_the_model_context_is_read_in_parts(tmp_path: Path, make_llm: LLMFactory) -> None:
    def fn(call: ProviderCall) -> str:
        if call.context.get("review") == "part":
            return json.dumps({"notes": ["the part states a comparison on accuracy"]})
        return scripted_reviewer(call)

    gateway_llm, provider = make_llm(fn)
    budget = PromptBudget(role="review", context_tokens=4096, max_tokens=400)  # a small model's window
    llm = LLM(gateway_llm.transport, max_reasks=2, budgets={"review": budget})
    text = "\n\n".join(f"Paragraph {i}: the method and the baseline on accuracy. " * 6 for i in range(40))
    cfg = ReviewConfig(reviews=1, page_images=0)
    parts = split_paper(text, budget, cfg, "A long paper", 0)
    assert len(parts) > 1 and "".join(parts).replace("\n", "") == text.replace("\n", "")
    assert all(p.startswith("Paragraph") for p in parts)  # split between paragraphs, never inside one
    job = ReviewJob("r-1", 1, llm, 0, "balanced", "A long paper", parts, [], 0, tmp_path / "review-1.json")
    assert job.run([]).status == "good"

    steps = [c.context.get("review") for c in provider.calls]
    assert steps == ["part"] * (len(parts) - 1) + ["write"]
    for call in provider.calls:  # every prompt fits the model's context with room for the answer
        assert sum(len(m.text) for m in call.messages) / budget.chars_per_token <= budget.tokens
    last = last_user_text(provider.calls[-1].messages)
    assert f"You read the paper in {len(parts)} parts" in last and "the part states a comparison" in last
    assert parts[-1] in last


def test_a_decision_the_overall_score_contradicts_is_re_asked(run_dir: Path, make_llm: LLMFactory) -> None:
    """SmolLM2 answered "accept" with overall 1: such a form is re-asked, and the review that
    comes back agrees with its score. A stored form is read back as it was written."""
    asked: list[int] = []

    def fn(call: ProviderCall) -> str:
        answer = json.loads(scripted_reviewer(call))
        if call.context.get("review") != "meta":
            asked.append(1)
            if len(asked) == 1:
                answer.update(overall=1, decision="accept")
        return json.dumps(answer)

    llm, _ = make_llm(fn)
    result = review_paper(
        run_dir / "paper" / "good", llm, ReviewConfig(reviews=1, page_limit=2), InProcessExecutor(1)
    )
    assert len(asked) == 2  # the contradicting form, then its re-ask
    (review,) = result.reviews
    assert review.status == "ok" and review.form is not None
    assert (review.form.overall, review.form.decision) == (6, "accept")
    stored = json.loads((run_dir / "paper" / "good" / REVIEW_JSON).read_text())
    stored["reviews"][0]["form"].update(overall=1, decision="accept")  # an older run's answer
    (run_dir / "paper" / "good" / REVIEW_JSON).write_text(json.dumps(stored))
    assert load_result(run_dir / "paper" / "good" / REVIEW_JSON).reviews[0].form.overall == 1  # type: ignore[union-attr]
