"""Resolving what a sentence names: the ledger's groups (their labels, readable names, the role
words "our method" and "the baseline", and the abbreviations a paper defines, such as "random
Fourier features (RFF)") and the run's metrics ("test accuracy" for test_accuracy, "held-out" to the
metric's role). Matching is case-insensitive. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.claimread import cue
from engine.claims import Claim, Ledger
from engine.claimwords import GENERIC_WORDS, PHRASE_OPENERS, unknown, words

_BEST_OF = re.compile(r"\s*\((?:best of|tuned:)[^()]*\)\s*$", re.IGNORECASE)
# "long name (ABBR)": the abbreviation a paper defines for a phrase it just wrote.
_DEFINED = re.compile(r"((?:[A-Za-z][\w'-]*\s+){0,6}[A-Za-z][\w'-]*)\s*\(([A-Za-z][A-Za-z0-9-]{0,11})\)")
# "we refer to X as ABBR", "X, hereafter ABBR": the same, in words.
_CALLED = re.compile(
    r"(?:refer to|call|denote|name|abbreviate|shorten|write)\s+(.{2,80}?)\s+(?:as|by|to)\s+"
    r"([A-Za-z][A-Za-z0-9-]{0,11})\b"
    r"|(.{2,80}?),?\s+(?:hereafter|henceforth)\s+([A-Za-z][A-Za-z0-9-]{0,11})\b"
    # "we call X ABBR for short", "X (ABBR for short)": the abbreviation after the phrase, no "as"
    r"|(?:call|name|dub)\s+(.{2,80}?)\s+(?-i:([A-Z][A-Za-z0-9-]{0,11}))\s+"
    r"(?:for short|in short|for brevity)\b"
    # "X, or ABBR, trails ...": an abbreviation in apposition
    r"|(.{2,80}?),\s+or\s+(?-i:([A-Z][A-Z0-9-]{1,11})),",
    re.IGNORECASE,
)
# "ABBR denotes X", "we write ABBR for X": the abbreviation first.
_STANDS_FOR = re.compile(
    r"\b([A-Z][A-Za-z0-9-]{0,11})\s+"
    r"(?:denotes|stands for|(?:is |as |being )?(?:short|shorthand) for|abbreviates)\s+(.{2,80}?)(?=[.;,:)]|$)"
    r"|\b[Ww]e (?:write|use)\s+([A-Za-z][A-Za-z0-9-]{0,11})\s+(?:for|to denote)\s+(.{2,80}?)(?=[.;,:)]|$)"
    r"|\b[Ll]et\s+([A-Z][A-Za-z0-9-]{0,11})\s+(?:denote|stand for|be short for)\s+(.{2,80}?)(?=[.;,:)]|$)"
    # "TB (tuned baseline) averages ...": the abbreviation first, its phrase in parentheses
    r"|\b([A-Z][A-Z0-9-]{1,11})\s*\(([^()]{2,80})\)",
    re.MULTILINE,
)
METHOD_WORDS = (
    "the method",
    "our method",
    "our approach",
    "the proposed method",
    "the proposed approach",
    "our model",
)
_ROLE_WORDS = {*METHOD_WORDS, "baseline"}
_HELD_OUT = (
    r"(?:held[- ]?out|hold[- ]?out|test(?:ing)?(?:[- ]set)?|unseen|out[- ]of[- ]sample|generali[sz]ation)"
)
_SYNONYMS = {"val": "validation", "valid": "validation", "acc": "accuracy", "train": "training"}
_UNITS = {"s", "ms", "sec", "secs", "seconds", "pct", "percent"}
# Metric words a reader takes for a measured quantity; one that maps to no metric of the run is a finding.
METRIC_WORDS = re.compile(
    r"\b(accuracy|error rate|f1(?:[- ]score)?|auc|auroc|roc[- ]auc|precision|recall|perplexity|bleu|rouge|"
    r"auprc|pr[- ]auc|average precision|rmse|mse|mae|r2|r²|log[- ]likelihood|calibration error|ece|latency|"
    r"throughput|runtime|"
    r"(?:fit|training|inference) time|memory|specificity|sensitivity|brier(?: score)?|mcc|kappa|iou|"
    r"dice(?: score)?|ndcg|wer|psnr|ssim|log[- ]?loss|(?:false|true) (?:positive|negative) rate|fpr|tpr|"
    r"robustness|correlation(?: coefficient)?|gpu[- ]hours?|flops|energy(?: use| consumption)?|coverage)\b",
    re.IGNORECASE,
)


# The nouns a measured quantity is named by, with a modifier before them: "parameter count",
# "energy consumption", "calibration slope".
MEASURE_HEADS = re.compile(
    r"\b(count|consumption|usage|footprint|slope|intercept|coefficient|entropy|divergence|overhead|rate|ratio|"
    r"efficiency|utili[sz]ation)\b",
    re.IGNORECASE,
)
# The word right before a metric's name, a hyphenated compound as one ("noise-detection").
_MODIFIER = re.compile(r"(?<![\w./\\-])([A-Za-z][\w'-]*[A-Za-z0-9])[ \t]+$")
# Words that make a metric another metric: "balanced accuracy" is not accuracy.
_QUALIFIER = re.compile(
    r"\b((?:class[- ])?balanced[- ]|macro[- ]|micro[- ]|weighted[- ]|worst[- ]group[- ]|top[- ]?\d+[- ]|"
    r"per[- ]class[- ]|mean[- ]class[- ]|geometric[- ]mean[- ])$",
    re.IGNORECASE,
)


def _pair(m: re.Match[str]) -> tuple[str, str]:
    """The two groups of the alternative of `m` that matched."""
    first, second = m.groups()[0::2], m.groups()[1::2]
    at = next(i for i, g in enumerate(first) if g is not None)
    return first[at], second[at]


def _singular(word: str) -> str:
    """ "accuracies" -> "accuracy", "scores" -> "score" (a metric's name is singular)."""
    return re.sub(r"ies$", "y", word) if word.endswith("ies") else re.sub(r"(?<=[^s])s$", "", word)


def _words(s: str) -> str:
    """The key a name is matched by: lower case, underscores and hyphens as spaces."""
    return " ".join(re.sub(r"[_\s-]+", " ", s).split()).lower()


def short_label(label: str) -> str:
    """A group label without its provenance: "method (best of tuning)" -> "method"."""
    return _BEST_OF.sub("", label).strip()


def metric_phrases(metric: str) -> list[str]:
    """How a paper writes a metric: its name, with spaces for underscores, without a unit suffix."""
    out = {metric.lower()}
    for ws in (_words(metric).split(), [_SYNONYMS.get(w, w) for w in _words(metric).split()]):
        out.add(" ".join(ws))
        if len(ws) > 1 and ws[-1] in _UNITS:
            out.add(" ".join(ws[:-1]))
    return sorted(out, key=len, reverse=True)


def _glossed(sentence: str, found: list[tuple[int, frozenset[str]]]) -> list[tuple[int, frozenset[str]]]:
    """A name with the group's label in parentheses after it ("baseline (draft n0000)", as Silva's
    tables print a group) is one group: the labels both may denote."""
    out: list[tuple[int, frozenset[str]]] = []
    for at, labels in found:
        if out and out[-1][1] & labels and re.fullmatch(r"[^()]*\(\s*", sentence[out[-1][0] : at]):
            out[-1] = (out[-1][0], out[-1][1] & labels)
            continue
        out.append((at, labels))
    return out


# "the method of Han et al.", "the baseline from Smith (2020)": a role word that a name after it
# makes someone else's.
_OTHERS = r"(?!\s+(?:of|from|by|in)\s+(?!(?:Section|Table|Figure|Appendix|Eq)\b)(?-i:[A-Z]))"


def _pattern(phrases: list[str]) -> re.Pattern[str]:
    keys = sorted({_words(p) for p in phrases}, key=len, reverse=True)
    alts = [
        r"[\s_-]+".join(map(re.escape, k.split())) + (_OTHERS if k in _ROLE_WORDS else "") for k in keys if k
    ]
    if not alts:  # a ledger without claims names nothing
        return re.compile(r"(?!)")
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE)


@dataclass
class Resolver:
    """Group and metric names of one ledger, with the aliases one paper defines."""

    ledger: Ledger
    aliases: dict[str, str] = field(default_factory=dict)  # alias (lower case) -> group label
    defined: dict[str, str] = field(default_factory=dict)  # the abbreviation as written -> group label

    def __post_init__(self) -> None:
        self.labels = sorted(
            {g.label for c in self.ledger.claims for g in (c.subject, c.reference)}, key=len, reverse=True
        )
        # A name may denote several groups ("baseline": the first stage's and the tuned one).
        self.names: dict[str, set[str]] = {}
        for c in self.ledger.claims:
            for g in (c.subject, c.reference):
                for n in (g.label, short_label(g.label), g.name):
                    if len(n) > 1:
                        self.names.setdefault(_words(n), set()).add(g.label)
        head = self.ledger.headline
        if head is not None:
            for w in METHOD_WORDS:
                self.names.setdefault(w, set()).add(head.subject.label)
            # "baseline" is the headline's reference unless a group is called just that.
            reference = (head.reference.name or head.reference.label).lower()
            if "baseline" in reference and "baseline" not in self.names:
                self.names["baseline"] = {head.reference.label}
        self._compile()

    def _compile(self) -> None:
        self.all_names = {**self.names, **{k: {v} for k, v in self.aliases.items()}}
        self.group_re = _pattern(list(self.all_names))
        metrics = [p for c in self.ledger.claims for p in metric_phrases(c.metric)]
        self.known = frozenset(w for n in [*self.all_names, *metrics, self.ledger.idea] for w in words(n))

    def unresolved(self, phrase: str) -> list[str]:
        """The words of `phrase` that are none of the run's (its groups' names, labels and aliases,
        its metrics, its idea) nor generic words of experimental prose: a phrase with one names
        something the run does not have."""
        return unknown(phrase, self.known)

    def define(self, text: str) -> None:
        """Record the abbreviations `text` defines for a group's name."""
        # Each alternative of these patterns captures (phrase, abbreviation), _STANDS_FOR's the other
        # way round: the pair is the one alternative that matched.
        found = [_pair(m) for r in (_DEFINED, _CALLED) for m in r.finditer(text)]
        found += [_pair(m)[::-1] for m in _STANDS_FOR.finditer(text)]
        for phrase, abbr in found:
            words = phrase.split()
            for k in range(len(words)):
                labels = self.names.get(_words(" ".join(words[k:])))
                # "we refer to X as the ...": a word of prose is no abbreviation
                if (
                    labels is not None
                    and len(labels) == 1
                    and _words(abbr) not in self.names
                    and abbr.lower() not in GENERIC_WORDS
                ):
                    self.aliases[_words(abbr)] = next(iter(labels))
                    self.defined[abbr] = next(iter(labels))
                    break
        self._compile()

    def named(self, sentence: str) -> list[frozenset[str]]:
        """The labels each group name of `sentence` may denote, one entry per name as masked."""
        return [frozenset(self.all_names[_words(m.group(0))]) for m in self.group_re.finditer(sentence)]

    def groups(self, sentence: str) -> list[tuple[int, frozenset[str]]]:
        """(position, labels it may denote) of each group the sentence names, in order; a role
        word ("our method") yields to two groups named outright ("our method, X, beats Y")."""
        found = [(m.start(), _words(m.group(0))) for m in self.group_re.finditer(sentence)]
        strong = {frozenset(self.all_names[k]) for _, k in found if k not in _ROLE_WORDS}
        if len(strong) >= 2:
            found = [(at, k) for at, k in found if k not in _ROLE_WORDS]
        return _glossed(sentence, [(at, frozenset(self.all_names[k])) for at, k in found])

    def metrics(self, sentence: str) -> list[str]:
        """The run's metrics the sentence names, "held-out X" resolved to X's test metric."""
        found = []
        for claim_metric in sorted({c.metric for c in self.ledger.claims}, key=len, reverse=True):
            if _pattern(metric_phrases(claim_metric)).search(sentence):
                found.append(claim_metric)
        for m in re.finditer(_HELD_OUT + r"\s+([a-z][\w-]*(?:\s+[a-z][\w-]*)?)", sentence, re.IGNORECASE):
            test = self.test_metric(m.group(1))
            if test and test not in found:
                found.append(test)
        return found

    def test_metric(self, base: str) -> str | None:
        """The held-out test metric whose name holds `base` ("accuracy" -> test_accuracy)."""
        for c in self.ledger.claims:
            if c.role == "test" and _singular(_words(base).split()[0]) in _words(c.metric).split():
                return c.metric
        return None

    def unmeasured(self, sentence: str) -> list[str]:
        """Metric words of the sentence that name no metric of the run; a qualified metric
        ("balanced accuracy", "top-5 accuracy") must be measured with its qualifier."""
        measured = " ".join(p for c in self.ledger.claims for p in metric_phrases(c.metric))
        if "accuracy" in measured:  # an error rate is one minus an accuracy
            measured += " error rate error"
        out = []
        for m in METRIC_WORDS.finditer(sentence):
            word = _words(m.group(1))
            qualifier = _QUALIFIER.search(sentence[: m.start()])
            if qualifier and _words(qualifier.group(1)) + " " + word not in measured:
                out.append(qualifier.group(1) + m.group(1))
            elif not any(w in measured for w in (word, word.replace(" ", "_"), word.split()[0])):
                out.append(m.group(1))
            elif (other := self._modified(sentence, m.start(), m.group(1), measured)) is not None:
                out.append(other)
        for m in MEASURE_HEADS.finditer(sentence):
            if (other := self._modified(sentence, m.start(), m.group(1), measured)) is not None:
                out.append(other)
        return out

    def _modified(self, sentence: str, at: int, head: str, measured: str) -> str | None:
        """A measure named by a word of the run's and a modifier that is not ("out-of-distribution
        accuracy" where the run measured validation accuracy, "energy consumption"): another metric."""
        m = _MODIFIER.search(sentence[:at])
        if m is None or (phrase := f"{m.group(1)} {head}") and _words(phrase) in measured:
            return None
        word = m.group(1)
        if re.search(r"(?:ed|ing|ly)$", word, re.IGNORECASE) or not self.unresolved(word):
            return None
        # "the method raises accuracy": a word after a noun may be a verb, not a modifier
        before = re.search(r"([A-Za-z']+)\s+$", sentence[: m.start()])
        if before and before.group(1).lower() not in PHRASE_OPENERS and not cue(before.group(1)):
            return None
        return phrase

    def selection_as_held_out(self, sentence: str) -> str | None:
        """The selection metric written as a held-out test result ("held-out accuracy", "accuracy
        on the test set", "accuracy (held-out test)"), when the run has no such test metric."""
        for c in self.ledger.claims:
            if c.role != "selection":
                continue
            metric = _pattern(metric_phrases(c.metric)).pattern
            before = re.compile(r"(?<!no )" + _HELD_OUT + r"\s+" + metric, re.IGNORECASE)
            after = re.compile(
                metric + r"\s*(?:\(\s*(?:held[- ]out|test)|(?:on|over) the (?:held[- ]out |unseen )?"
                r"(?:test|held[- ]out)\b)",
                re.IGNORECASE,
            )
            m = before.search(sentence)
            if m and self.test_metric(c.metric) is None:
                return c.metric
            if after.search(sentence):
                return c.metric
        return None

    def claims_of(self, mentions: list[frozenset[str]]) -> list[Claim]:
        """Claims between the first two groups named (one group: every claim it is in)."""
        first = list(dict.fromkeys(mentions))
        if len(first) >= 2:
            a, b = first[0], first[1]
            return [
                c
                for c in self.ledger.claims
                if (c.subject.label in a and c.reference.label in b)
                or (c.subject.label in b and c.reference.label in a)
            ]
        if first:
            return [c for c in self.ledger.claims if first[0] & {c.subject.label, c.reference.label}]
        return []
