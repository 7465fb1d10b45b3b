"""What a sentence about a claim may say: the one reading of comparison sentences that the writers
(before the final compile) and the reviewer (on any paper) apply against the claim ledger.

`plain` turns LaTeX into reading text (macros expanded, each `\\claim{id}` kept as a marker);
`sentences` splits it, the marker staying with its sentence; `match_claim` finds the claim a
sentence states; `check_sentence` says how it contradicts the claim: the wrong direction, a
significance or superiority the test does not support, a difference denied that the test found,
another metric (or the selection metric called held-out), the groups' means swapped, a number that
is none of the claim's. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from engine.claims import Claim, Ledger

CLAIM_MARK = "[claim:{}]"
CLAIM_MARK_RE = re.compile(r"\[claim:([A-Za-z0-9-]+)\]")
_WRAPPERS = re.compile(
    r"\\(?:textbf|emph|textit|texttt|ensuremath|mathrm|text|caption|section\*?|subsection\*?)\{"
)


def plain(tex: str, macros: dict[str, str]) -> str:
    """LaTeX to reading text: macros expanded, math and formatting dropped, claims marked."""
    text = re.sub(r"(?<!\\)%.*", "", tex)
    text = re.sub(r"\\claim\{([^{}]*)\}", lambda m: CLAIM_MARK.format(m.group(1)), text)
    names = sorted(macros, key=len, reverse=True)
    if names:
        pattern = re.compile(r"\\(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z])(?:\{\})?")
        text = pattern.sub(lambda m: _unescape(macros[m.group(1)]), text)
    text = re.sub(r"\\pmsd\{([^{}]*)\}\{([^{}]*)\}", r"\1 ± \2", text)
    text = re.sub(r"\\times\s*10\^\{?(-?\d+)\}?", r"×10^\1", text)
    text = text.replace("$\\pm$", "±").replace("\\pm", "±").replace("$\\alpha", "α").replace("\\alpha", "α")
    text = text.replace("\\%", "%").replace("\\,", " ").replace("~", " ").replace("--", "–")
    for _ in range(3):
        text = _WRAPPERS.sub("{", text)
    text = re.sub(r"\\item(?:\[[^\]]*\])?", "\n", text)
    text = re.sub(r"\\[A-Za-z]+\*?(?:\[[^\]]*\])?", " ", text)
    text = text.replace("$", "").replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"[ \t]+", " ", text)


def _unescape(latex: str) -> str:
    return (
        re.sub(r"\\ensuremath\{(.*)\}", r"\1", latex)
        .replace("\\_", "_")
        .replace("\\&", "&")
        .replace("\\%", "%")
    )


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
_GENERIC = re.compile(r"\b(?:method|baseline)\b", re.IGNORECASE)
_HYPOTHESIS = re.compile(r"\bhypothes[ie]s\b", re.IGNORECASE)
_HELD_OUT = re.compile(r"held.out|test set|unseen data", re.IGNORECASE)
_DECIMAL = re.compile(r"(?<![\w.])([-−]?)(\d+\.\d+)(?![\w.]|\.\d)")
_BOUNDARY = re.compile(r"[.!?](?=\s|\[claim|$)(?:\[claim:[A-Za-z0-9-]+\])?|\n\s*\n")


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
    reversed_ = _reversed(sentence, claim)
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
    out = swapped_means(sentence, claim, reversed_)
    values = claim_values(claim)
    for lit in _literals(sentence):
        if not any(_rounds_to(v, lit) for v in values):
            out.append(f"prints {lit}, which is none of the claim's figures")
    return out


def _literals(sentence: str) -> list[str]:
    return [m.group(1).replace("−", "-") + m.group(2) for m in _DECIMAL.finditer(sentence)]


def swapped_means(sentence: str, claim: Claim, reversed_: bool) -> list[str]:
    """The first-named group is given the other group's mean (an inverted conclusion)."""
    means = []
    for lit in _literals(sentence):
        is_s, is_r = _rounds_to(claim.subject.mean, lit), _rounds_to(claim.reference.mean, lit)
        if is_s != is_r:
            means.append("subject" if is_s else "reference")
    first = "reference" if reversed_ else "subject"
    if len(means) >= 2 and means[0] != first and first in means:
        return ["gives each group the other group's mean"]
    return []


def _reversed(sentence: str, claim: Claim) -> bool:
    s_at, r_at = _order(sentence, claim)
    return r_at >= 0 and (s_at < 0 or r_at < s_at)


def _p(claim: Claim) -> str:
    return "untested" if claim.p is None else f"{claim.p:.3g}"


def match_claim(sentence: str, ledger: Ledger) -> Claim | None:
    """The claim a sentence states: its `[claim:id]` marker, else the two groups it names (the
    metric it names first), else the headline for "the method" against "the baseline"."""
    mark = CLAIM_MARK_RE.search(sentence)
    if mark:
        return ledger.get(mark.group(1))
    named = [c for c in ledger.claims if c.subject.label in sentence and c.reference.label in sentence]
    if named:
        metric = [c for c in named if c.metric in sentence]
        return (metric or named)[0]
    low = sentence.lower()
    if ledger.headline is not None and "method" in low and "baseline" in low:
        return ledger.headline
    return None


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str  # as read, the claim marker removed
    claim: Claim | None  # None: a comparison that matches no claim
    problems: tuple[str, ...]


def check_text(text: str, ledger: Ledger) -> list[SentenceCheck]:
    """Every comparison sentence of `text` (reading text, see `plain`) with its claim and problems."""
    out = []
    for sentence in sentences(text):
        if _HYPOTHESIS.search(sentence):  # what is tested, not a result
            continue
        mark = CLAIM_MARK_RE.search(sentence)
        shown = CLAIM_MARK_RE.sub("", sentence)
        claim = match_claim(sentence, ledger)
        if not (mark or _STRONG.search(sentence) or _NULL.search(sentence)):
            # No comparison words, but both groups' figures ("reaches X against Y"): their order.
            if claim is None and ledger.headline is not None and _GENERIC.search(shown):
                claim = ledger.headline  # "the method reaches X ... against Y" names one side only
            if claim is not None and len(_literals(shown)) >= 2:
                unlabelled = shown.replace(claim.subject.label, " ").replace(claim.reference.label, " ")
                swapped = swapped_means(unlabelled, claim, _reversed(shown, claim))
                out.append(SentenceCheck(shown, claim, tuple(swapped)))
            continue
        if claim is None:
            if mark or _STRONG.search(sentence):
                why = (
                    f"names claim {mark.group(1)}, not in the ledger"
                    if mark
                    else "matches no claim of the ledger"
                )
                out.append(SentenceCheck(shown, None, (f"is a comparison that {why}",)))
            continue
        out.append(SentenceCheck(shown, claim, tuple(check_sentence(shown, claim, ledger))))
    return out
