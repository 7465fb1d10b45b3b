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
import math
import re
from dataclasses import dataclass

from engine.claims import Claim, Ledger, load_ledger
from review.integrity.numbers import main_text
from review.integrity.report import CheckResult, Finding
from review.integrity.source import CLAIM_MARK_RE, reading_text
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

_NULL = re.compile(
    r"no (?:detectable|significant|statistically significant|clear|reliable) difference|did not "
    r"(?:outperform|differ|improve|beat)|not significantly|no better|no worse|indistinguishable|on par|"
    r"comparable",
    re.IGNORECASE,
)
_WORSE = re.compile(r"worse than|underperform\w*|inferior to|fell short|falls short|trail\w*", re.IGNORECASE)
_BETTER = re.compile(
    r"better than|outperform\w*|improv\w*|exceed\w*|surpass\w*|\bbeats?\b|\bbeat\b|superior to",
    re.IGNORECASE,
)
_HIGHER, _LOWER = re.compile(r"\bhigher\b", re.IGNORECASE), re.compile(r"\blower\b", re.IGNORECASE)
_SIGNIFICANT = re.compile(r"significant|p\s*<\s*0?\.0\d", re.IGNORECASE)
_STRONG = re.compile(
    r"outperform\w*|better than|worse than|superior to|inferior to|surpass\w*|\bbeats?\b|"
    r"significantly (?:better|worse|higher|lower)",
    re.IGNORECASE,
)
_HYPOTHESIS = re.compile(r"\bhypothes[ie]s\b", re.IGNORECASE)
_HELD_OUT = re.compile(r"held.out|test set|unseen data", re.IGNORECASE)
_DECIMAL = re.compile(r"(?<![\w.])([-−]?)(\d+\.\d+)(?![\w.]|\.\d)")
_BOUNDARY = re.compile(r"[.!?](?=\s|\[claim|$)(?:\[claim:[A-Za-z0-9-]+\])?|\n\s*\n")
MAX_FINDINGS = 50


def sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        out.append(" ".join(text[start : m.end()].split()))
        start = m.end()
    out.append(" ".join(text[start:].split()))
    return [s for s in out if s]


def asserted(sentence: str, claim: Claim) -> str | None:
    """What the sentence says of the claim's first-named group: better, worse, no difference."""
    if _NULL.search(sentence):
        return "no detectable difference"
    if _WORSE.search(sentence):
        return "worse"
    if _BETTER.search(sentence):
        return "better"
    higher, lower = _HIGHER.search(sentence), _LOWER.search(sentence)
    if higher and not lower:
        return "better" if claim.direction == "maximize" else "worse"
    if lower and not higher:
        return "worse" if claim.direction == "maximize" else "better"
    return None


def _flip(v: str | None) -> str | None:
    return {"better": "worse", "worse": "better"}.get(v or "", v)


def _order(sentence: str, claim: Claim) -> tuple[int, int]:
    """Where the subject and the reference are named (-1: not named); generic words for the
    headline's method and baseline."""
    s, r = sentence.find(claim.subject.label), sentence.find(claim.reference.label)
    if s < 0 and r < 0 and claim.headline:
        low = sentence.lower()
        s, r = low.find("method"), low.find("baseline")
    return s, r


def _decimals(x: str) -> int:
    return len(x.partition(".")[2])


def _rounds_to(value: float | None, literal: str) -> bool:
    if value is None or not math.isfinite(value):
        return False
    tol = 0.5 * 10.0 ** -_decimals(literal) + 1e-9
    x = float(literal)
    return abs(value - x) <= tol or abs(abs(value) - abs(x)) <= tol


def claim_values(claim: Claim) -> list[float]:
    values = [claim.subject.mean, claim.reference.mean, claim.diff, claim.alpha, 95.0]
    values += [
        v for v in (claim.subject.sd, claim.reference.sd, claim.statistic, claim.df, claim.effect) if v
    ]
    for pair in (claim.diff_ci, claim.effect_ci):
        values += list(pair or ())
    if claim.p is not None and claim.log10_p is not None:
        exponent = math.floor(claim.log10_p)
        values += [claim.p, 10 ** (claim.log10_p - exponent)]
    return values


def check_sentence(sentence: str, claim: Claim, ledger: Ledger) -> list[str]:
    """Why `sentence` contradicts `claim` (empty: it states the claim faithfully)."""
    problems = []
    s_at, r_at = _order(sentence, claim)
    reversed_ = r_at >= 0 and (s_at < 0 or r_at < s_at)
    said = asserted(sentence, claim)
    said = _flip(said) if reversed_ else said
    truth = claim.verdict
    if said in ("better", "worse"):
        if truth in ("no detectable difference", "untested"):
            problems.append(f"states '{said}' but the test found {truth} (p = {_p(claim)})")
        elif said != truth:
            problems.append(f"states '{said}' but the claim's verdict is '{truth}'")
    elif said == "no detectable difference" and truth in ("better", "worse"):
        problems.append(f"states no difference but the test found '{truth}' (p = {_p(claim)})")
    if _SIGNIFICANT.search(sentence) and not _NULL.search(sentence) and not claim.significant:
        problems.append(
            f"claims significance the test does not support (p = {_p(claim)}, alpha {claim.alpha})"
        )
    named = [
        m
        for m in {c.metric for c in ledger.claims}
        if re.search(rf"(?<![\w]){re.escape(m)}(?![\w])", sentence)
    ]
    if named and claim.metric not in named:
        problems.append(f"names {', '.join(sorted(named))} but the claim is on {claim.metric}")
    if claim.role == "selection" and _HELD_OUT.search(sentence):
        problems.append(f"presents {claim.metric}, the metric the search selected on, as a held-out test")
    unlabelled = sentence.replace(claim.subject.label, " ").replace(claim.reference.label, " ")
    problems += _numbers(unlabelled, claim, reversed_)
    return problems


def _numbers(sentence: str, claim: Claim, reversed_: bool) -> list[str]:
    literals = [m.group(1).replace("−", "-") + m.group(2) for m in _DECIMAL.finditer(sentence)]
    means = []
    for lit in literals:
        is_s, is_r = _rounds_to(claim.subject.mean, lit), _rounds_to(claim.reference.mean, lit)
        if is_s != is_r:
            means.append("subject" if is_s else "reference")
    first = "reference" if reversed_ else "subject"
    out = []
    if len(means) >= 2 and means[0] != first and first in means:
        out.append("gives each group the other group's mean")
    values = claim_values(claim)
    for lit in literals:
        if not any(_rounds_to(v, lit) for v in values):
            out.append(f"prints {lit}, which is none of the claim's figures")
    return out


def _p(claim: Claim) -> str:
    return "untested" if claim.p is None else f"{claim.p:.3g}"


def _match(sentence: str, ledger: Ledger, text_claims: dict[str, Claim]) -> Claim | None:
    mark = CLAIM_MARK_RE.search(sentence)
    if mark:
        return text_claims.get(mark.group(1))
    named = [c for c in ledger.claims if c.subject.label in sentence and c.reference.label in sentence]
    if named:
        metric = [c for c in named if c.metric in sentence]
        return (metric or named)[0]
    low = sentence.lower()
    if ledger.headline is not None and "method" in low and "baseline" in low:
        return ledger.headline
    return None


def ledger_claims(paper: Paper, ledger: Ledger) -> CheckResult:
    name = "unsupported_claims"
    text, from_source = reading_text(paper)
    text = main_text(text)
    by_id = {c.id: c for c in ledger.claims}
    findings: list[Finding] = []
    checked = 0
    for sentence in sentences(text):
        is_comparison = CLAIM_MARK_RE.search(sentence) or _STRONG.search(sentence) or _NULL.search(sentence)
        if not is_comparison or _HYPOTHESIS.search(sentence):  # what is tested, not a result
            continue
        claim = _match(sentence, ledger, by_id)
        shown = CLAIM_MARK_RE.sub("", sentence)[:400]
        if claim is None:
            mark = CLAIM_MARK_RE.search(sentence)
            if mark or _STRONG.search(sentence):
                why = (
                    f"names claim {mark.group(1)}, not in the ledger"
                    if mark
                    else "matches no claim of the ledger"
                )
                findings.append(Finding(message=f'a comparison that {why}: "{shown}"', where="ledger.json"))
            continue
        checked += 1
        for problem in check_sentence(CLAIM_MARK_RE.sub("", sentence), claim, ledger):
            findings.append(
                Finding(
                    message=f'"{shown}" {problem}',
                    where=f"claim {claim.id}: {claim.subject.label} vs {claim.reference.label} on "
                    f"{claim.metric}, {claim.verdict}",
                )
            )
    source = "the LaTeX source with results.tex expanded" if from_source else "the PDF text"
    detail = (
        f"{checked} comparison sentence(s) of {source} against {len(ledger.claims)} claim(s) of ledger.json"
    )
    return CheckResult.of(name, findings[:MAX_FINDINGS], detail)


def claims_check(paper: Paper) -> CheckResult:
    ledger = load_ledger(paper.out_dir)
    if ledger is not None:
        return ledger_claims(paper, ledger)
    weaker = unsupported_claims(paper)
    return weaker.model_copy(
        update={
            "detail": "no ledger.json beside the paper (not written by Silva): the weaker check ran, which "
            "cannot tell a claim's direction or metric; " + weaker.detail,
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
