"""Comparison sentences against the claim ledger, or, without one, the older weaker check.

A paper Silva wrote has ledger.json beside it (engine/claims.py): every comparison it may state,
with the test and the verdict. Each comparison sentence is matched to its claim (by the
`\\claim{id}` the writer left, else by the two groups it names, else the headline for "the method"
against "the baseline"), and is a finding when it contradicts the claim: the wrong direction, a
significance or superiority the test does not support, a difference denied that the test found,
another metric (or the selection metric called held-out), a group's number attached to the other
group, or a number that is none of the claim's. A strong comparison no claim supports is one too.

A paper without a ledger gets the weaker check: a sentence claiming a gain needs a test or interval
somewhere in the paper and a significant replicated comparison somewhere in its run; the report
says that the weaker check ran. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from engine.claimnames import Resolver
from engine.claims import Ledger, load_ledger
from engine.claimtext import SentenceCheck, check_text
from engine.llm import LLM
from review.integrity.llmclaims import ModelLayer, extract
from review.integrity.numbers import main_text
from review.integrity.report import CheckResult, Finding
from review.integrity.source import reading_text
from review.paper import Paper

_CLAIM = re.compile(
    r"\b(outperform\w*|improve[sd]?\b|improvement|better than|superior to|surpass\w*|beats?\b|"
    r"significant(?:ly)? (?:better|higher|lower|improv\w*)|gains? (?:of|over)|reduc\w+ (?:the )?error)",
    re.IGNORECASE,
)
_TEST = re.compile(
    r"p\s*[<=≤]\s*0?\.\d|p-value|t-test|Welch|Wilcoxon|Mann.Whitney|permutation test|confidence interval|"
    r"\b\d+\s*%\s*CI\b|bootstrap|standard error|±|\\pm|statistically significant",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?]*[.!?]", re.DOTALL)
ALPHA = 0.05

MAX_FINDINGS = 50


def ledger_claims(paper: Paper, ledger: Ledger, llm: LLM | None = None) -> CheckResult:
    """The deterministic reading, and with `llm` the model layer too (review.llm_claims)."""
    name = "unsupported_claims"
    raw, from_source = reading_text(paper)
    text = main_text(raw)
    names = Resolver(ledger)
    names.define(text)
    checks = check_text(text, ledger, names)
    findings = [
        Finding(message=f'"{c.sentence[:400]}" {problem}', where=_where(c))
        for c in checks
        for problem in c.problems
    ]
    layers = "the deterministic reading only (no model extraction)"
    if llm is not None:
        layer = extract(text, ledger, names, llm, paper.idea)
        findings += _model_findings(layer, [c.sentence for c in checks if c.problems])
        layers = "the deterministic reading and " + layer.summary()
    source = "the LaTeX source with results.tex expanded" if from_source else "the PDF text"
    defined = ", ".join(f"{a} = {label}" for a, label in sorted(names.defined.items())) or "none"
    detail = (
        f"{sum(c.claim is not None for c in checks)} comparison sentence(s) and table row(s) of {source} "
        f"against {len(ledger.claims)} claim(s) of ledger.json; layers run: {layers}; "
        f"abbreviations the paper defines: {defined}"
    )
    return CheckResult.of(name, findings[:MAX_FINDINGS], detail)


def _where(c: SentenceCheck) -> str:
    if c.claim is None:
        return "ledger.json"
    return (
        f"claim {c.claim.id}: {c.claim.subject.label} vs {c.claim.reference.label} on "
        f"{c.claim.metric}, {c.claim.verdict}"
    )


def _model_findings(layer: ModelLayer, flagged: list[str]) -> list[Finding]:
    """The model layer's findings, labelled as such; a statement the deterministic reading
    already flagged is not reported twice."""
    seen = {" ".join(s.lower().split()) for s in flagged}
    out: list[Finding] = []
    for statement, check in layer.checks:
        quote = " ".join(statement.quote.lower().split())
        if not check.problems or any(quote and (quote in s or s in quote) for s in seen):
            continue
        seen.add(quote)
        out += [
            Finding(
                message=f'model layer: "{statement.quote}" (read as "{check.sentence}") {problem}',
                where=_where(check),
            )
            for problem in check.problems
        ]
    return out


def claims_check(paper: Paper, llm: LLM | None = None) -> CheckResult:
    """Against the ledger beside the paper (with the model layer when `llm` is given), else the
    weaker check, which has no model layer."""
    ledger = load_ledger(paper.out_dir)
    if ledger is not None:
        return ledger_claims(paper, ledger, llm)
    weaker = unsupported_claims(paper)
    unrun = "; the model layer did not run (it checks records against a ledger)" if llm is not None else ""
    return weaker.model_copy(
        update={
            "detail": "no ledger.json beside the paper (not written by Silva): the weaker check ran, which "
            "cannot tell a claim's direction or metric; " + weaker.detail + unrun,
        }
    )


@dataclass(frozen=True)
class Comparison:
    source: str
    metric: str
    subject: str
    other: str
    p_value: float


def replicated_comparisons(paper: Paper) -> list[Comparison]:
    """Welch tests of each aggregation's subject group against every other group, per metric."""
    from scipy.stats import ttest_ind

    assert paper.run_dir is not None
    out = []
    for path in sorted(paper.run_dir.glob("nodes/*/attempt-*/aggregate.json")):
        try:
            groups: dict[str, dict[str, list[float]]] = json.loads(path.read_text())["values"]
        except (OSError, ValueError, KeyError):
            continue
        labels = list(groups)
        if len(labels) < 2:
            continue
        subject = labels[0]
        for other in labels[1:]:
            for metric, a in groups[subject].items():
                b = groups[other].get(metric, [])
                if len(a) >= 2 and len(b) >= 2:
                    p = float(ttest_ind(a, b, equal_var=False).pvalue)
                    out.append(
                        Comparison(
                            str(path.relative_to(paper.run_dir)), metric, subject, other, p if p == p else 1.0
                        )
                    )  # identical constant groups give nan: no difference
    return out


def unsupported_claims(paper: Paper) -> CheckResult:
    name = "unsupported_claims"
    text = main_text(paper.text)
    if not text.strip():
        return CheckResult.skipped(name, "no text")
    claims = [" ".join(s.split()) for s in _SENTENCE.findall(text) if _CLAIM.search(s)]
    if not claims:
        return CheckResult.of(name, [], "no sentence claims an improvement")
    first = claims[0][:160]
    findings = []
    if not _TEST.search(text):
        findings.append(
            Finding(
                message=f"{len(claims)} sentence(s) claim an improvement but the paper reports no "
                "statistical test or interval",
                where=first,
            )
        )
    detail = f"{len(claims)} claim sentence(s)"
    if paper.run_dir is not None:
        comparisons = replicated_comparisons(paper)
        significant = [c for c in comparisons if c.p_value < ALPHA]
        detail += (
            f"; {len(comparisons)} replicated comparison(s) in the run, {len(significant)} with p < {ALPHA}"
        )
        if not comparisons:
            findings.append(
                Finding(
                    message="the paper claims an improvement but the run has no replicated comparison "
                    "(no aggregation with two groups of two or more seeds)",
                    where=first,
                )
            )
        elif not significant:
            best = min(comparisons, key=lambda c: c.p_value)
            findings.append(
                Finding(
                    message="the paper claims an improvement but no replicated comparison in the run is "
                    f"significant (smallest Welch p = {best.p_value:.3g}: {best.subject} vs {best.other} on "
                    f"{best.metric})",
                    where=best.source,
                )
            )
    return CheckResult.of(name, findings, detail)
