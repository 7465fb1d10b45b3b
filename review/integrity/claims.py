"""Claims of improvement without a replicated comparison and a test.

A sentence that claims a gain ("outperforms", "improves", "significantly better") needs two
things behind it: replicates of both sides in the run (aggregation nodes' aggregate.json groups
with two or more values each), and a test. The run's own data are tested here (Welch's t-test
between the aggregation's subject and each other group); the paper must also report a test or
an interval for the reader.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from review.integrity.numbers import main_text
from review.integrity.report import CheckResult, Finding
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
