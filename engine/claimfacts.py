"""Statements of fact about groups that compare nothing: "X reaches 0.93", "over 5 seeds",
"on the held-out test set, X scores 0.91". Each number is checked against the group it is said of
(the group named just before it, or the one it is "for"), never against any value of the run;
a count of seeds against the groups' replicates; a held-out or test figure must not be a figure of
the metric the search selected on. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re

from engine.claimnames import Resolver
from engine.claimnumbers import Literal_, changes, fits, fits_group, literals, rounds_to
from engine.claimread import cue
from engine.claims import Claim, GroupSummary, Ledger

# A comparison's own figures (p, difference, interval, effect) only where the sentence speaks of one.
_STATISTIC = re.compile(
    r"\bp\s*[=<>≤]|differ|\bgap\b|\bapart\b|interval|\bCI\b|statistic|\b[tgd]\s*=|effect|margin|%|points|fold"
    # a distance between two groups: "0.05 short of", "ahead by", "G minus G", "G − G = 0.01"
    r"|\bshort\b|\bahead\b|\bbehind\b|\bminus\b|\s[-−]\s",
    re.I,
)
# "0.91 for X", "0.91 is reached by X": the number is said of the group after it.
_FOR = re.compile(
    r"\s*(?:%|percent|points?)?\s*(?:[A-Za-z]+\s+){0,2}?(?:for|by|under|of)\s+(?:(?:the|our|an?)\s+)?$",
    re.IGNORECASE,
)
_FROM_WITH_TO = re.compile(
    r"\bfrom\s+[-−]?\d+(?:\.\d+)?\s*%?\s+(?:with|under|using|for)\s+(?:the\s+)?\s*\S*\s*to\s*$", re.I
)
_CONTRAST = re.compile(r"\s*,?\s*(?:where|while|whereas)\s+(?:(?:the|our)\s+)?", re.IGNORECASE)
_WITH = re.compile(r"\s*(?:with|using|via)\s+(?:(?:the|our|an?)\s+)?", re.IGNORECASE)
_PARALLEL = re.compile(r"\d%?\s+(?:with|under|using)\s+(?:(?:the|our|an?)\s+)?(?:it|them|G)\b", re.IGNORECASE)
# A count of replicates: "3 seeds", "6 independent runs", "repeated 6 times".
_SEEDS = re.compile(
    r"(?<![\w.])(\d+)(?=\s+(?:(?:random|independent|different|training)\s+)?"
    r"(?:seeds|replicates|repetitions|runs|trials)\b)"
    r"|(?:(?<=repeated )|(?<=rerun )|(?<=run )|(?<=trained ))(\d+)(?=\s+times\b)",
    re.IGNORECASE,
)
# The held-out or test data, or a figure measured on it, in any wording: "held-out", "hold-out",
# "unseen", "out of sample", "generalization", test data of any kind ("test fold", "fresh test
# images", "testing accuracy") and evaluation "on the test ...", never a statistical test.
HELD_OUT_WORDS = re.compile(
    r"(?<!no )\b(?:held[- ]?out|hold[- ]?out|unseen|out[- ]of[- ]sample|generali[sz]ation|final test|"
    r"(?:never|not) (?:been )?seen|"
    r"test(?:ing)?[- ](?:[a-z]+[- ])?(?:set|data|split|examples?|samples?|instances|images|points|partition|"
    r"portion|fold|subset|accurac(?:y|ies)|error|performance|scores?|results?|metrics?|loss|evaluation|numbers?|"
    r"figures?|"
    r"time|phase|distribution|cases)|(?:on|in|at|during) (?:the |our )?(?:final |held-out )?test(?:ing)?\b"
    r")\b",
    re.IGNORECASE,
)


# "validation figures, not held-out test results": a held-out reading denied (callers drop it
# before they look for held-out words).
DENIED_HELD_OUT = re.compile(
    r"\b(?:not|no|never|rather than|instead of)\s+(?:an?\s+|the\s+|any\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:held[- ]?out|hold[- ]?out|test(?:ing)?|unseen)\b(?:[- ][\w-]+){0,2}",
    re.IGNORECASE,
)


def _blanked(sentence: str, names: Resolver) -> str:
    """The sentence with each group name blanked at the same length (positions kept)."""
    return names.group_re.sub(lambda m: " " * len(m.group(0)), sentence)


def attributed(sentence: str, names: Resolver) -> list[tuple[Literal_, frozenset[str]]]:
    """Each number with the group it is said of: the one it is "for" ("0.91 for X", "reached by
    X"), else the one named last before it, else the first one after it."""
    mentions = names.groups(sentence)
    if not mentions:
        return []
    blank = _blanked(sentence, names)
    # "X (3 seeds)": a count of seeds is checked as one (`seed_counts`), no figure of a metric
    lits = [x for x in literals(blank) if not _SEEDS.match(blank, x.start)]
    # "X and Y reach 0.84 and 0.90 (respectively)": as many figures as groups, all after them.
    if (
        len(lits) == len(mentions) >= 2
        and (mentions[-1][0] < lits[0].start or lits[-1].start < mentions[0][0])
        and len(set(g for _, g in mentions)) >= 2
    ):
        return [(lit, g) for lit, (_, g) in zip(lits, mentions, strict=True)]
    # "0.0866 with it and 0.0591 with X": figures in parallel, each said of what it is with.
    parallel = len(_PARALLEL.findall(names.group_re.sub("G", sentence))) >= 2
    out = []
    for lit in lits:
        after = [(at, g) for at, g in mentions if at > lit.start]
        before = [(at, g) for at, g in mentions if at < lit.start]
        between = blank[lit.start : after[0][0]].split(lit.text, 1)[-1] if after else ""
        if (
            before
            and not after
            and _FROM_WITH_TO.search(blank[: lit.start])
            and len(set(g for _, g in mentions)) >= 2
        ):
            # "goes from 0.89 with G to 0.96": the end of the change is the other group's
            out.append((lit, next(g for _, g in mentions if g != before[-1][1])))
        elif after and before and _CONTRAST.fullmatch(between):
            # "G reaches 0.33 where G reaches 0.12": the figure before the contrast is the other side's
            other = [g for _, g in mentions if g != after[0][1]]
            out.append((lit, other[0] if other else before[-1][1]))
        elif (
            after
            and (
                # "0.96 exceeds that of G": the figure is the other side's, not G's
                _FOR.match(between)
                and not cue(between)
                or re.fullmatch(r"\s*\(\s*", between)  # "0.91 (X)"
                # "from 0.89 with X to 0.96 with Y": each end of a change is said of the group it is with
                or _WITH.fullmatch(between)
                and (parallel or re.search(r"\b(?:from|to)\s*$", blank[: lit.start]))
            )
        ):
            out.append((lit, after[0][1]))
        else:
            out.append((lit, (before[-1] if before else after[0])[1]))
    return out


def _summaries(ledger: Ledger, labels: frozenset[str], metrics: list[str]) -> list[GroupSummary]:
    return [
        g
        for c in ledger.claims
        if not metrics or c.metric in metrics
        for g in (c.subject, c.reference)
        if g.label in labels
    ]


def _claims(ledger: Ledger, labels: frozenset[str], metrics: list[str]) -> list[Claim]:
    return [
        c
        for c in ledger.claims
        if (not metrics or c.metric in metrics) and labels & {c.subject.label, c.reference.label}
    ]


def group_numbers(sentence: str, names: Resolver, ledger: Ledger) -> list[str]:
    """Numbers said of a group that are none of its figures (on the metric the sentence names)."""
    metrics = names.metrics(sentence)
    out = []
    for lit, labels in attributed(sentence, names):
        own = _summaries(ledger, labels, metrics)
        # A change (%, points, a ratio) is a comparison's figure, wherever it stands.
        statistic = _STATISTIC.search(sentence) or lit.unit != "plain"
        tested = _claims(ledger, labels, metrics) if statistic else []
        if fits_group(lit, own) or any(fits(lit, c, means=False) for c in tested):
            continue
        who = " or ".join(sorted(labels))
        other = sorted(
            {g.label for g in _summaries(ledger, frozenset(names.labels), metrics) if rounds_to(g.mean, lit)}
            - labels
        )
        if other:
            out.append(f"gives {who} the figure {lit.text} of {', '.join(other)}")
        else:
            out.append(f"prints {lit.text} for {who}, which is none of its figures")
    return out


def seed_counts(sentence: str, ledger: Ledger) -> list[str]:
    """A count of seeds that no group of the run was replicated over."""
    ns = {g.n for c in ledger.claims for g in (c.subject, c.reference)}
    return [
        f"states {n} seeds, but the groups were replicated over {', '.join(map(str, sorted(ns)))}"
        for m in _SEEDS.finditer(sentence)
        if ns and (n := int(m.group(1) or m.group(2))) not in ns
    ]


def _change(lit: Literal_, claim: Claim) -> bool:
    """The literal is the claim's difference, or its change in percent or points."""
    pool = [abs(claim.diff)] if lit.unit == "plain" else changes(claim).get(lit.unit, [])
    return any(rounds_to(v, lit) for v in pool)


def held_out_figure(sentence: str, names: Resolver, ledger: Ledger) -> str | None:
    """The selection metric that a held-out or test statement prints a figure of (and no test
    metric has that figure); `sentence` with its denied held-out words dropped."""
    if not HELD_OUT_WORDS.search(sentence):
        return None
    labels = frozenset(label for _, found in names.groups(sentence) for label in found)
    if not labels:
        return None  # no group: the held-out choice's own measure, or no result at all
    lits = [x for x in literals(_blanked(sentence, names)) if x.unit != "fold" and not x.p_value]
    tests = [t for t in ledger.claims if t.role == "test" and labels & {t.subject.label, t.reference.label}]
    for c in ledger.claims:
        groups = [g for g in (c.subject, c.reference) if g.label in labels]
        if c.role != "selection" or not groups:
            continue
        # a group's figure ("84.8% on the test set"), or with both groups named the comparison's
        # own ("a test-set gap of 0.051", "5.7% better at test time")
        both = len(groups) == 2
        for lit in lits:
            scale = 100.0 if lit.unit == "percent" else 1.0
            own = lit.unit != "points" and any(rounds_to(scale * g.mean, lit) for g in groups)
            if (own or both and _change(lit, c)) and not any(fits(lit, t) for t in tests):
                return c.metric
    return None
