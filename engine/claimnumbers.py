"""Every number a sentence or table cell prints, at any position (before a full stop too):
decimals, integers, percentages, points and x-fold ratios; and the figures of a claim or a group
each may legitimately be. A literal matches a figure that rounds to it at the printed precision.
See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from engine.claims import Claim, GroupSummary

Unit = Literal["plain", "percent", "points", "fold"]
# A number not glued to a word ("n0020", "F1", "CIFAR-10"), its sign, and what follows it.
_NUMBER = re.compile(
    r"(?<![\w.\-/^×])([-−]?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
    r"(?:\s*(%|×(?!\s*10))|(?:\s*|-)(percent|percentage[- ]points?|points?|pts?|pp|x|fold|times)"
    r"(?![A-Za-z0-9])"
    r"|(?![\w]|\.\d))",
    re.IGNORECASE,
)
# A reference to a part of the paper or a threshold, not a result.
_NOT_RESULT = re.compile(
    r"(?:§|\b(?:Section|Sec\.|Figure|Fig\.|Table|Tab\.|Eq\.|Equation|Appendix|Algorithm|Stage|Step"
    r"|Theorem|Lemma|version|v|node|seed|top|page))\s*\(?$|[<>≤≥]\s*$|\b(?:alpha|α)\s*=?\s*$",
    re.IGNORECASE,
)
# "at a significance level of 0.05": the test's threshold, no group's figure.
_LEVEL = re.compile(r"\b(?:significance|alpha|α|confidence)[- ]level\s*(?:of|=|:)?\s*$", re.IGNORECASE)
_AT_LEVEL = re.compile(
    r"\s*(?:significance\s+|confidence\s+|α\s+)?level\b", re.IGNORECASE
)  # "at the 0.05 level"


# "2.9 fewer errors than X": a count compared, which a writer may give as a ratio without its "x".
_COUNT_COMPARED = re.compile(
    r"\s+(?:fewer|more)\s+(?:[\w-]+\s+)?(?:errors|mistakes|misclassifications)\b", re.IGNORECASE
)
_P_IS = re.compile(r"\bp(?:[- ]value)?\s*=\s*$", re.IGNORECASE)
# "by a factor of 1.6": a ratio without its "x".
_FACTOR = re.compile(r"\bfactor of\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Literal_:
    text: str
    value: float
    decimals: int
    unit: Unit
    start: int
    ratio: bool = False  # "2.9 fewer errors than X": a difference or a ratio without its "x"
    p_value: bool = False  # "p = 0.022": a p-value's figure, no other


# "In percent, X is 96.2 ...", "(in %)": the sentence gives its figures in percent without a sign.
_IN_PERCENT = re.compile(
    r"\b(?:in|as) (?:percent(?:ages?)?|%)(?! (?:points?|of)\b)|\((?:in )?%\)", re.IGNORECASE
)


def literals(text: str) -> list[Literal_]:
    out = []
    in_percent = bool(_IN_PERCENT.search(text))
    for m in _NUMBER.finditer(text):
        if (
            _NOT_RESULT.search(text[max(0, m.start() - 12) : m.start()])
            or _LEVEL.search(text[max(0, m.start() - 30) : m.start()])
            or _AT_LEVEL.match(text, m.end())
        ):
            continue
        if re.match(r"\.\s", text[m.end() : m.end() + 2]) and re.search(
            r"(?:^|[:;,(])\s*$", text[: m.start()]
        ):
            continue  # "ranking: 1. X, 2. Y": an enumeration's number
        digits = m.group(2).replace(",", "")
        if re.fullmatch(r"(?:19|20)\d\d", digits):  # a year
            continue
        suffix = (m.group(3) or m.group(4) or "").lower()
        unit: Unit = (
            "fold"
            if _FACTOR.search(text[max(0, m.start() - 16) : m.start()]) and not suffix
            else "percent"
            if suffix in ("%", "percent")
            else "points"
            if suffix.startswith(("point", "pp", "pt", "percentage"))
            else "fold"
            if suffix and suffix[0] in "x×tf-"
            else "percent"
            if in_percent and float(digits) > 1
            else "plain"
        )
        sign = "-" if m.group(1) else ""
        ratio = unit == "plain" and bool(_COUNT_COMPARED.match(text, m.end()))
        decimals = len(digits.partition(".")[2])
        p_value = bool(_P_IS.search(text[max(0, m.start() - 12) : m.start()]))
        out.append(Literal_(sign + digits, float(sign + digits), decimals, unit, m.start(), ratio, p_value))
    return out


def rounds_to(value: float | None, lit: Literal_) -> bool:
    if value is None or not math.isfinite(value):
        return False
    tol = 0.5 * 10.0**-lit.decimals + 1e-9
    return abs(value - lit.value) <= tol or abs(abs(value) - abs(lit.value)) <= tol


def group_values(g: GroupSummary) -> list[float]:
    return [v for v in (g.mean, g.sd, float(g.n), g.budget_nodes) if v is not None]


def claim_values(claim: Claim) -> list[float]:
    values = [claim.subject.mean, claim.reference.mean, claim.diff, claim.alpha, 95.0]
    values += [
        v
        for v in (claim.subject.sd, claim.reference.sd, claim.statistic, claim.df, claim.effect)
        if v is not None  # a Mann-Whitney U of 0 is a figure too
    ]
    values += [float(claim.subject.n), float(claim.reference.n)]
    values += [v for v in (claim.subject.budget_nodes, claim.reference.budget_nodes) if v is not None]
    for pair in (claim.diff_ci, claim.effect_ci):
        values += list(pair or ())
    return values + _p_figures(claim)


def _p_figures(claim: Claim) -> list[float]:
    if claim.p is None or claim.log10_p is None or not math.isfinite(claim.log10_p):
        return []
    return [claim.p, 10 ** (claim.log10_p - math.floor(claim.log10_p))]


def changes(claim: Claim) -> dict[Unit, list[float]]:
    """What a change between the two groups may be printed as: in percent (relative to either
    group, or percentage points of a fraction), in points, or as a ratio."""
    a, b, d = claim.subject.mean, claim.reference.mean, abs(claim.diff)
    relative = [100 * d / abs(x) for x in (a, b) if x]
    ratio = [x / y for x, y in ((a, b), (b, a)) if y]
    if 0 <= a <= 1 and 0 <= b <= 1:  # of a fraction: its error rate's ratio too ("2.1x fewer errors")
        ratio += [(1 - x) / (1 - y) for x, y in ((a, b), (b, a)) if y < 1]
    return {"percent": relative + [100 * d], "points": [100 * d, d], "fold": ratio}


def fits(lit: Literal_, claim: Claim, means: bool = True) -> bool:
    """The literal is one of the claim's figures (a percentage: a change or a figure in percent);
    `means=False`: one of the comparison's own figures only, never a group's mean or sd."""
    values = claim_values(claim)
    if lit.p_value:  # the p-value, or its mantissa ("p = 1.1×10^-4")
        return any(rounds_to(v, lit) for v in _p_figures(claim))
    if not means:
        own = {claim.subject.mean, claim.reference.mean, claim.subject.sd, claim.reference.sd}
        values = [v for v in values if v not in own]
    if lit.unit == "plain":
        return any(rounds_to(v, lit) for v in values + (changes(claim)["fold"] if lit.ratio else []))
    pool = changes(claim)[lit.unit]
    if lit.unit == "percent":
        pool = pool + [100 * v for v in values] + [95.0, 100 * claim.alpha]
    return any(rounds_to(v, lit) for v in pool)


# "p < 0.001": a bound on a p-value (a threshold, never read as a figure) says which tests it fits.
_P_BOUND = re.compile(r"\bp(?:[- ]value)?\s*([<>≤≥])\s*(\d*\.\d+|\d+)(?![\d.])", re.IGNORECASE)


def p_bounds_met(text: str, claim: Claim) -> int:
    """How many of the p-value bounds `text` prints the claim's p meets ("p < 0.001": below it)."""
    if claim.p is None:
        return 0
    p, out = claim.p, 0
    for m in _P_BOUND.finditer(text):
        bound = float(m.group(2))
        met = {"<": p < bound, "≤": p <= bound, ">": p > bound, "≥": p >= bound}
        out += met[m.group(1)]
    return out


def fits_group(lit: Literal_, groups: list[GroupSummary]) -> bool:
    scale = 100.0 if lit.unit == "percent" else 1.0
    return any(rounds_to(scale * v, lit) for g in groups for v in group_values(g))
