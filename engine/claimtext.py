"""What a sentence about a claim may say: the one reading of comparison sentences that the writers
(before the final compile) and the reviewer (on any paper) apply against the claim ledger.

`plain` turns LaTeX into reading text (macros expanded, each `\\claim{id}` kept as a marker);
`sentences` splits it, the marker staying with its sentence; `match_claims` finds the claims a
sentence may state; `check_sentence` says how it contradicts the claim: the wrong direction, a
significance or superiority the test does not support, a difference denied that the test found,
another metric (or the selection metric called held-out), the groups' means swapped, a number that
is none of the claim's. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.claimfacts import DENIED_HELD_OUT, attributed, group_numbers, held_out_figure, seed_counts
from engine.claimnames import Resolver
from engine.claimnumbers import Literal_, fits, literals, p_bounds_met, rounds_to
from engine.claimread import Reading
from engine.claims import Claim, Ledger
from engine.claimsides import absent_comparator, absent_member, absent_object, absent_result, read_named
from engine.claimtables import FLOAT_MARK, blocks, check_table

CLAIM_MARK = "[claim:{}]"
CLAIM_MARK_RE = re.compile(r"\[claim:([A-Za-z0-9-]+)\]")
_WRAPPERS = re.compile(
    r"\\(?:textbf|emph|textit|texttt|ensuremath|mathrm|text|caption|section\*?|subsection\*?)\{"
)

# A table's or figure's bounds (with a tabular's column spec) end the sentence before and after;
# a float's own bounds stay marked, so that a table's caption is read from within its float only.
_FLOAT_BOUND = re.compile(
    r"\\(?:begin|end)\{(table|figure|tabular[x*]?|longtable|center)\*?\}(?:\[[^\]]*\])?"
    r"(?:\{(?:[^{}]|\{[^{}]*\})*\}){0,2}"
)


_SYMBOLS = {
    "times": "×", "rightarrow": "→", "to": "→", "longrightarrow": "→", "approx": "≈", "sim": "≈",
    "simeq": "≈", "geq": "≥", "ge": "≥", "leq": "≤", "le": "≤", "gg": ">", "ll": "<", "neq": "≠",
    "textgreater": ">", "textless": "<", "uparrow": "↑", "downarrow": "↓",
}  # fmt: skip
_SYMBOL = re.compile(r"\\(" + "|".join(_SYMBOLS) + r")(?![A-Za-z])")


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
    # Relations written as math symbols are words of the sentence ("2.3$\times$ fewer errors").
    text = _SYMBOL.sub(lambda m: _SYMBOLS[m.group(1)], text)
    text = text.replace("$\\pm$", "±").replace("\\pm", "±").replace("$\\alpha", "α").replace("\\alpha", "α")
    text = text.replace("\\%", "%").replace("\\,", " ").replace("~", " ").replace("--", "–")
    # A row's end ("\\\\") ends its line, so that a table written on one line is read row by row.
    text = re.sub(r"\\\\(?:\[[^\]]*\])?", "\n", text)
    text = _FLOAT_BOUND.sub(lambda m: "\n" if m.group(1).startswith("tabular") else FLOAT_MARK, text)
    text = re.sub(r"\\(?:begin|end)\{[^{}]*\}", " ", text)  # the environment's name is no word of the text
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


# The idea's own words (its hypothesis and description): what is tested, not a result.
IDEA_SECTION = re.compile(r"(?<=\\section\{Idea\}).*?(?=\\section|\\end\{document\}|\Z)", re.DOTALL)
# A hypothesis rejected is a result ("the test rejects the hypothesis of equal means").
_HYPOTHESIS = re.compile(
    r"(?<!null )(?<!reject the )(?<!rejects the )(?<!rejected the )\bhypothes(?:[ie]s|i[sz]e[sd]?)\b",
    re.IGNORECASE,
)
# "vs.", "e.g.", "et al." and "Fig." end no sentence.
ABBREVIATED = r"(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)(?<!\bal)(?<!\bFig)(?<!\bEq)(?<!\bcf)(?<!\bresp)"
# "ranking: 1. X, 2. Y": an enumeration's number is no sentence's end.
_ENUMERATED = r"(?<![:,;(] \d)(?<![:,;(]\d)"
_BOUNDARY = re.compile(
    ABBREVIATED + _ENUMERATED + r"[.!?](?=\s|\[claim|$)(?:\[claim:[A-Za-z0-9-]+\])?|\n\s*\n"
)


def sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        out.append(" ".join(text[start : m.end()].split()))
        start = m.end()
    out.append(" ".join(text[start:].split()))
    return [s for s in out if s]


def _read(sentence: str, names: Resolver) -> Reading:
    """The sentence read with each group it names replaced by "G", its claim marker dropped."""
    return read_named(CLAIM_MARK_RE.sub("", sentence), names)


def asserted(reading: Reading, claim: Claim) -> str | None:
    """What the sentence says of the claim's first-named group: better, worse, no difference, or
    a denial of one of them; higher and lower turned by the metric's direction."""
    said = reading.said
    if said in ("higher", "lower"):
        return "better" if (said == "higher") == (claim.direction == "maximize") else "worse"
    return said


def _flip(v: str | None) -> str | None:
    return {"better": "worse", "worse": "better", "not better": "not worse", "not worse": "not better"}.get(
        v or "", v
    )


def _sign(claim: Claim) -> str:
    return "better" if (claim.diff > 0) == (claim.direction == "maximize") else "worse"


def _direction_problems(said: str | None, reading: Reading, claim: Claim) -> list[str]:
    truth = claim.verdict
    if said in ("better", "worse"):
        if reading.hedged and not reading.significant:  # "higher, though not significantly": the means
            if claim.diff != 0 and said != _sign(claim):
                return [f"states '{said}' but the first group's mean is {_sign(claim)}"]
            return []
        if truth in ("no detectable difference", "untested"):
            return [f"states '{said}' but the test found {truth} (p = {_p(claim)})"]
        if said != truth:
            return [f"states '{said}' but the claim's verdict is '{truth}'"]
    if said == "no detectable difference" and truth in ("better", "worse"):
        return [f"states no difference but the test found '{truth}' (p = {_p(claim)})"]
    if said in ("not better", "not worse") and truth == said.removeprefix("not "):
        return [f"states '{said}' but the test found '{truth}' (p = {_p(claim)})"]
    return []


def check_sentence(sentence: str, claim: Claim, ledger: Ledger, names: Resolver | None = None) -> list[str]:
    """Why `sentence` contradicts `claim` (empty: it states the claim faithfully)."""
    names = names or Resolver(ledger)
    reading = _read(sentence, names)
    clause = _clause_subject(CLAIM_MARK_RE.sub("", sentence), reading, names)
    if reading.of_group is not None and reading.of_group < len(found := names.named(sentence)):
        clause = found[reading.of_group]  # "the better configuration is X"
    if clause is not None and (claim.subject.label in clause) != (claim.reference.label in clause):
        reversed_ = claim.reference.label in clause  # "X is our choice; Y is clearly worse"
    else:
        reversed_ = _reversed(sentence, claim, names) != reading.fronted
    said = asserted(reading, claim)
    problems = _direction_problems(_flip(said) if reversed_ else said, reading, claim)
    if reading.significant and said != "no detectable difference" and not claim.significant:
        problems.append(
            f"claims significance the test does not support (p = {_p(claim)}, alpha {claim.alpha})"
        )
    named = names.metrics(sentence)
    if named and claim.metric not in named:
        problems.append(f"names {', '.join(sorted(named))} but the claim is on {claim.metric}")
    problems += [f"names {w}, a metric the run did not measure" for w in names.unmeasured(sentence)]
    problems += _numbers(sentence, claim, reversed_, ledger, named, names)
    return problems


# Where a clause of its own begins: what it says is said of the group it names first.
# Where a clause of its own begins: what it says is said of the group it names first. A fronted
# phrase ("Between X and Y, ...", "Of X and Y, ...") ends at its comma.
_CLAUSE = re.compile(
    r"[;:]|,\s*(?:whereas|while|but)\b|^\W*(?:between|of|among|amongst|out of|from)\b[^,;]*,", re.IGNORECASE
)
_ANAPHOR = re.compile(r"\bthe (former|latter)\b", re.IGNORECASE)


def _clause_subject(sentence: str, reading: Reading, names: Resolver) -> frozenset[str] | None:
    """The group a comparison's words are said of when they stand in a later clause than the
    sentence's first group and that clause names a group before them, or calls one of two groups
    named before "the former" or "the latter"."""
    cuts = list(_CLAUSE.finditer(reading.before))
    if not cuts:
        return None
    cut = cuts[-1].end() if cuts[-1].group(0).endswith(",") else cuts[-1].start()
    k0 = len(re.findall(r"\bG\b", reading.before[:cut]))
    k1 = len(re.findall(r"\bG\b", reading.before[cut:]))
    named = names.named(sentence)
    anaphor = _ANAPHOR.search(reading.before[cut:])
    if anaphor and not k1 and k0 >= 2 and len(named) >= 2:
        return named[0] if anaphor.group(1).lower() == "former" else named[1]
    return named[k0] if k0 and k1 and len(named) > k0 else None


def _numbers(
    named_sentence: str, claim: Claim, reversed_: bool, ledger: Ledger, named: list[str], names: Resolver
) -> list[str]:
    out = swapped_means(named_sentence, claim, reversed_, names)
    sentence = names.group_re.sub(" ", named_sentence)
    also = [c for c in ledger.claims if c.metric in named and c.stage == claim.stage]
    for lit in literals(sentence):
        if not any(fits(lit, c) for c in [claim, *also]):
            out.append(f"prints {lit.text}{_UNIT[lit.unit]}, which is none of the claim's figures")
        elif _as_difference(sentence, lit, claim):
            out.append(f"prints {lit.text} as the difference, but the difference is {abs(claim.diff):.3g}")
    return out


_UNIT = {"plain": "", "percent": "%", "points": " points", "fold": "-fold"}
# A sentence about the difference itself, and the figures of one that speaks of other statistics too.
_DIFFERENCE = re.compile(r"\b(?:difference|gap|margin|delta|apart)\b", re.IGNORECASE)
_OTHER_STATISTIC = re.compile(
    r"interval|\bCI\b|±|\bsd\b|standard|spread|varian|\bp\s*[=<>≤]|\b[tgdU]\s*=|statistic|effect|seeds?\b|runs?\b",
    re.IGNORECASE,
)


def _as_difference(sentence: str, lit: Literal_, claim: Claim) -> bool:
    """A plain figure in a sentence about the difference alone that is neither the difference nor
    a group's mean (a group's sd or a p-value printed as the difference)."""
    if lit.unit != "plain" or not _DIFFERENCE.search(sentence) or _OTHER_STATISTIC.search(sentence):
        return False
    if re.search(
        r"\bp(?:[- ]?values?)?\s+(?:of|is|was|equals|at)\s+$", sentence[max(0, lit.start - 20) : lit.start]
    ):
        return False  # "the p-value of 0.874 exceeds 0.05": a p-value, no difference
    own = [claim.diff, claim.subject.mean, claim.reference.mean, claim.alpha]
    return not any(rounds_to(v, lit) for v in own)


# Two figures as a change from one to the other ("from 0.86 to 0.91", "0.86 → 0.91"); "G beats G,
# 0.91 to 0.86" is a score, in the groups' order.
_FROM_TO = re.compile(r"\bfrom\s+[-−]?\d+(?:\.\d+)?\s*%?\s+to\s+[-−]?\d|\d\s*%?\s*→\s*[-−]?\d")


def swapped_means(sentence: str, claim: Claim, reversed_: bool, names: Resolver) -> list[str]:
    """The first-named group is given the other group's mean (an inverted conclusion). Where groups
    and figures alternate ("X (0.86) beats Y (0.91)", "from 0.86 under X to 0.91 under Y") each
    figure belongs to the group it is said of; else the figures follow the groups' order."""
    blank = names.group_re.sub(lambda m: " " * len(m.group(0)), sentence)
    pairs = [(lit, labels) for lit, labels in attributed(sentence, names) if lit.unit == "plain"]
    at = [a for a, _ in names.groups(sentence)]
    lits = [
        x
        for x in literals(blank)
        if x.unit == "plain" and rounds_to(claim.subject.mean, x) != rounds_to(claim.reference.mean, x)
    ]
    if lits and len(at) >= 2 and any(lits[0].start < a < lits[-1].start for a in at):
        for lit, labels in pairs:
            is_s, is_r = rounds_to(claim.subject.mean, lit), rounds_to(claim.reference.mean, lit)
            own_s, own_r = claim.subject.label in labels, claim.reference.label in labels
            if own_s != own_r and is_s != is_r and is_s != own_s:
                return ["gives each group the other group's mean"]
        return []
    if lits and at and lits[-1].start < at[0] and re.search(r"[,;:]", blank[lits[-1].start : at[0]]):
        return []  # "Despite the raw means (0.12 vs. 0.25), G ... G": figures apart from the groups
    own = [
        (lit, labels)
        for lit, labels in pairs
        if rounds_to(claim.subject.mean, lit) != rounds_to(claim.reference.mean, lit)
    ]
    if len(own) >= 2 and all(
        (claim.subject.label in labels) == rounds_to(claim.subject.mean, lit)
        and (claim.reference.label in labels) == rounds_to(claim.reference.mean, lit)
        for lit, labels in own
    ):
        return []  # "X leads; Y reaches 0.89, compared with 0.96 for X": each figure its group's
    means = ["subject" if rounds_to(claim.subject.mean, lit) else "reference" for lit in lits]
    first = "reference" if reversed_ else "subject"
    if _FROM_TO.search(blank):  # "raises it from 0.86 to 0.91": the first-named group's figure last
        means.reverse()
    if len(means) >= 2 and means[0] != first and first in means:
        return ["gives each group the other group's mean"]
    return []


def _reversed(sentence: str, claim: Claim, names: Resolver) -> bool:
    """The claim's reference is named before its subject (or alone)."""
    order = [labels for _, labels in names.groups(CLAIM_MARK_RE.sub("", sentence))]
    pair = {claim.subject.label, claim.reference.label}
    if order and pair <= order[0]:
        # An ambiguous first name ("baseline" for either): the other name says which it is not,
        # else the first mean printed says which it is.
        other = next((ls & pair for ls in order[1:] if len(ls & pair) == 1), None)
        if other is not None:
            return claim.subject.label in other
        first = next((x for x in literals(names.group_re.sub(" ", sentence)) if x.unit == "plain"), None)
        return (
            first is not None
            and rounds_to(claim.reference.mean, first)
            and not rounds_to(claim.subject.mean, first)
        )
    s = next((i for i, ls in enumerate(order) if claim.subject.label in ls), -1)
    r = next((i for i, ls in enumerate(order) if claim.reference.label in ls and i != s), -1)
    return r >= 0 and (s < 0 or r < s)


def _p(claim: Claim) -> str:
    return "untested" if claim.p is None else f"{claim.p:.3g}"


def match_claims(sentence: str, ledger: Ledger, names: Resolver | None = None) -> list[Claim]:
    """The claims a sentence may state, likeliest first: its `[claim:id]` marker, else the groups it
    names (on the metric it names, the claim whose figures it prints, the headline first), else the
    headline for "the method" against "the baseline". A sentence that names one group leaves the
    other side open: every claim of that group that fits its figures equally well."""
    mark = CLAIM_MARK_RE.search(sentence)
    if mark:
        return [c for c in [ledger.get(mark.group(1))] if c is not None]
    names = names or Resolver(ledger)
    mentions = [labels for _, labels in names.groups(sentence)]
    candidates = names.claims_of(mentions)
    if not candidates:
        if _GENERIC.search(sentence) and ledger.headline:
            return [ledger.headline]
        return _by_figures(sentence, ledger)
    metrics = names.metrics(sentence)
    lits = literals(names.group_re.sub(" ", CLAIM_MARK_RE.sub("", sentence)))
    on_metric = [c for c in candidates if c.metric in metrics] or candidates
    # A figure printed, or a bound on a p-value ("p < 0.001"), is a claim's where the claim has it.
    fit = {c.id: sum(fits(x, c) for x in lits) + p_bounds_met(sentence, c) for c in candidates}
    # Naming no metric and printing none of a claim's figures, a sentence may speak of any metric the
    # two groups were compared on: it is a finding only if it contradicts every one of them.
    unpinned = not metrics and not any(fit.values())
    # A figure that is the comparison's own (its difference, p) says more than a group's sd.
    own = {c.id: sum(fits(x, c, means=False) for x in lits) for c in on_metric}
    ranked = sorted(
        on_metric,
        key=lambda c: (
            fit[c.id],
            own[c.id],
            c.headline or c.id == ledger.headline_id,
            c.same_runs_as is None,
        ),
        reverse=True,
    )
    if len(set(mentions)) == 1 or unpinned:
        return [c for c in ranked if fit[c.id] == fit[ranked[0].id]]
    # Claims its figures fit equally well: any of them may be the one it states.
    top = (fit[ranked[0].id], own[ranked[0].id])
    return [c for c in ranked if (fit[c.id], own[c.id]) == top]


def _by_figures(sentence: str, ledger: Ledger) -> list[Claim]:
    """The claims a sentence that names no group states by its figures: its p-value, or two of a
    claim's own figures ("the gap of 0.011 in accuracy reaches significance (p = 0.504)")."""
    lits = literals(CLAIM_MARK_RE.sub("", sentence))
    p_fit = [c for c in ledger.claims if any(x.p_value and fits(x, c) for x in lits)]
    if p_fit:
        return p_fit
    return [c for c in ledger.claims if sum(fits(x, c) for x in lits if not x.p_value) >= 2]


def match_claim(sentence: str, ledger: Ledger, names: Resolver | None = None) -> Claim | None:
    """The likeliest claim a sentence states (see `match_claims`)."""
    return next(iter(match_claims(sentence, ledger, names)), None)


_GENERIC = re.compile(r"\bthe (?:method|baseline)\b|\bour\b", re.IGNORECASE)


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str  # as read, the claim marker removed
    claim: Claim | None  # None: a comparison that matches no claim
    problems: tuple[str, ...]


def check_text(text: str, ledger: Ledger, names: Resolver | None = None) -> list[SentenceCheck]:
    """Every comparison sentence and table row of `text` (reading text, see `plain`) with its claim
    and problems; every sentence for the selection metric called held-out."""
    if names is None:
        names = Resolver(ledger)
        names.define(text)
    prose = "\n".join(line if "&" not in line else "" for line in text.splitlines())
    out = [
        SentenceCheck(r.row, r.claim, r.problems)
        for rows, caption in blocks(text)
        for r in check_table(rows, caption, ledger, names)
    ]
    for sentence in sentences(prose):
        check = _check_one(sentence, ledger, names)
        if check is not None:
            out.append(check)
    return out


def _check_one(sentence: str, ledger: Ledger, names: Resolver) -> SentenceCheck | None:
    mark = CLAIM_MARK_RE.search(sentence)
    shown = CLAIM_MARK_RE.sub("", sentence).strip()
    claims = match_claims(sentence, ledger, names)
    claim = claims[0] if claims else None
    extra = _held_out(shown, claim, ledger, names) + tuple(seed_counts(shown, ledger))
    reading = _read(sentence, names)
    # What is tested, not a result: a hypothesis stated before its comparison ("we hypothesise
    # that X beats Y"); "X beats Y, against our hypothesis" is a result.
    hypothesis = _HYPOTHESIS.search(sentence)
    if hypothesis and not mark and (reading.said is None or _HYPOTHESIS.search(reading.before)):
        return SentenceCheck(shown, None, extra) if extra else None
    if shown.endswith("?") and not mark:  # a question states no result
        return SentenceCheck(shown, None, extra) if extra else None
    if not (mark or reading.comparison):
        facts = _facts(shown, names, ledger)
        return SentenceCheck(shown, claim, facts + extra) if claim or facts or extra else None
    if claim is None:
        # "On energy use, the two configurations are level": a comparison on a metric the run lacks
        why = _unmatched(mark, shown, names) or tuple(
            f"names {w}, a metric the run did not measure" for w in names.unmeasured(shown)
        )
        return SentenceCheck(shown, None, why + extra) if why or extra else None
    # Of the claims the sentence may state, the one it states faithfully if any.
    claim, problems = min(
        ((c, tuple(check_sentence(shown, c, ledger, names))) for c in claims), key=lambda cp: len(cp[1])
    )
    sides = tuple(
        dict.fromkeys(
            absent_object(shown, names) + absent_result(shown, names) + absent_comparator(shown, names)
        )
    )
    # A comparison naming one group and stating one value of it ("the winner, X, averages 0.74").
    if not problems and len({labels for _, labels in names.groups(shown)}) == 1:
        blank = names.group_re.sub(" ", shown)
        lits = literals(blank)
        if len(lits) == 1 and _STATES_VALUE.search(blank[: lits[0].start]):
            problems = tuple(group_numbers(shown, names, ledger))
    return SentenceCheck(shown, claim, problems + sides[:1] + extra)


_DENIED = re.compile(r"\b(?:not|no|never|without|neither|nor)\b|n't\b", re.IGNORECASE)


_STATES_VALUE = re.compile(
    r"\b(?:averag|reach|scor|attain|achiev|obtain|record|post|land)\w*\s+(?:an?\s+(?:\w+\s+){0,3}of\s+)?$",
    re.IGNORECASE,
)


def _facts(sentence: str, names: Resolver, ledger: Ledger) -> tuple[str, ...]:
    """Figures said of groups ("X reaches 0.93, Y 0.91"), each against its own group; a result
    about a group on a metric the run never measured."""
    facts = tuple(group_numbers(sentence, names, ledger)) + (
        absent_result(sentence, names)
        or absent_member(sentence, names)
        or absent_comparator(sentence, names)
        # a result of a group on a metric set against another system ("X tends to match Y on time")
        or (absent_object(sentence, names) if names.groups(sentence) and names.metrics(sentence) else ())
    )
    if literals(names.group_re.sub(" ", sentence)) or (
        names.groups(sentence) and not _DENIED.search(names.group_re.sub("G", sentence))
    ):
        facts += tuple(f"names {w}, a metric the run did not measure" for w in names.unmeasured(sentence))
    return facts


def _held_out(sentence: str, claim: Claim | None, ledger: Ledger, names: Resolver) -> tuple[str, ...]:
    """The selection metric called held-out or test, in any sentence; only the held-out choice's
    own measure of it (no group compared) may be called so."""
    sentence = DENIED_HELD_OUT.sub(" ", sentence)
    metric = names.selection_as_held_out(sentence)
    if metric is None or (claim is None and metric == ledger.heldout_metric):
        metric = held_out_figure(sentence, names, ledger)
    if metric is None:
        return ()
    return (f"presents {metric}, the metric the search selected on, as a held-out test",)


def _unmatched(mark: re.Match[str] | None, sentence: str, names: Resolver) -> tuple[str, ...]:
    """A comparison no claim supports: a marker not in the ledger, or a group the run lacks."""
    if mark:
        return (f"is a comparison that names claim {mark.group(1)}, not in the ledger",)
    return (absent_object(sentence, names) + absent_result(sentence, names))[:1]
