"""The sides of a comparison resolved against the run: its objects ("than X", "unlike X"), its
subject (the words before the comparing words) and each member of a list with a group in it ("X and
Y reach ..."). A side in words that are neither the run's own names nor the generic words of
experimental prose (engine/claimwords.py) names a system the run does not have, and is a finding.
See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re

from engine.claimnames import METRIC_WORDS, Resolver
from engine.claimnumbers import literals
from engine.claimread import Reading, cue, read


def read_named(sentence: str, names: Resolver) -> Reading:
    """The sentence read with each group it names replaced by "G" (a label's words are no cue)."""
    masked = names.group_re.sub("G", sentence)
    return read(masked, measured=bool(literals(masked)), metric=bool(names.metrics(sentence)))


_OBJECT = re.compile(
    # "contrary to", "according to", "due to": no relation between systems
    r"\b(?:than|over|against|versus|vs\.?|compared (?:with|to)|relative to|unlike|in contrast (?:with|to)|"
    r"(?<!would )(?<!'d )like|as (?:\w+ )?as|"
    r"(?<!contrary )(?<!according )(?<!due )(?<!thanks )(?<!owing )(?<!addition )(?<!prior )(?<!up )"
    # "to" with a system after it: after a word that relates two ("similar to", "lost to"), or before a
    # determiner or a name; "to call G better", "to reject the null": an infinitive, no object
    r"(?:\b(?:similar|close|superior|inferior|equal|identical|comparable|equivalent|second|relative|compared|"
    r"preferable|lost|loses|lose|losing|next|closer|closest|nearest|up|points|ground)\s+to"
    r"|(?<!er )to(?=\s+(?:(?:the|an?|our|their|its)\s|(?-i:[A-Z])|G\b)))|"
    r"improv\w* (?:on|upon)|comparisons? (?:with|to|against)|within (?:the )?(?:[\w-]+ )?noise of|"
    r"(?:replac|substitut|swapp?)\w* (?:the )?G (?:with|by|for)|"
    r"beat(?:s|ing)?|outperform\w*|surpass\w*|exceed\w*|edg(?:e|es|ed|ing) out|trail\w*|behind|ahead of|"
    r"match(?:es|ed)?|rival(?:s|led)?|equal(?:s|led)?|out-?(?!come|put|line|lier|set|side|look|right)\w+|"
    r"(?:on (?:a )?par|level|tied|comparable|similar|equivalent|indistinguishable|identical)"
    r" (?:with|to|from)|"
    # an instance named for a kind: "a strong baseline such as X"
    r"such as|e\.g\.,?|including|namely)\s+"
    # a lookahead, so that one side's words may hold the next relation ("to be on par with X")
    r"(?=((?:the\s+|an?\s+)?[^\s,.;:()]+(?:\s+[^\s,.;:()]+){0,3}))",
    re.IGNORECASE,
)
# The members of a list with a group in it ("G and X", "X, G and Y", "between X and G", "both G
# and X"): each is a side too. A member before the group starts a clause or follows a word that
# opens a list; one after it ends at the next member.
_NP = r"((?:(?!G\b)[^\s,;:()]+\s+){0,3}(?!G\b)[^\s,;:().]+)"
_AFTER_GROUP = re.compile(
    r"\bG\s*(?:,\s*(?:and|or|nor|then)\s+"
    + _NP
    + r"|\b(?:and|or|nor)\s+"
    + _NP
    + r"|,\s*"
    + _NP
    + r"(?=,?\s+(?:and|or)\b))"
)
_BEFORE_GROUP = re.compile(
    r"(?:^|[,;:(]|\b(?:between|among|amongst|both|including|of|with|neither|either))\s*"
    + _NP
    + r"\s*(?:,\s*G\s*,?\s*(?:and|or|nor|then)\b|(?:,\s*)?\b(?:and|or|nor|then)\s+G\b)",
    re.IGNORECASE,
)
_MEMBER_END = re.compile(
    r"(?:^|\s+)(?:and|or|nor|then|by|on|in|at|with|for|across|when|while|of|to|is|are|was|were)\b.*",
    re.IGNORECASE,
)


def _members(masked: str) -> list[str]:
    """The other members of each list that names a group in `masked` ("G and X perform ...")."""
    found = [x for r in (_AFTER_GROUP, _BEFORE_GROUP) for m in r.finditer(masked) for x in m.groups() if x]
    return [_MEMBER_END.sub("", x) for x in found]


# What may open a sentence before its subject: "Even", "On accuracy,", "In our runs,".
_LEAD = re.compile(
    r"^(?:.*[,:;]\s*)?(?:(?:even|only|also|still|however|notably|overall)\s+)*"
    r"(?:.{0,40}?\b(?:find|found|finds|observe[sd]?|see|sees|saw|note[sd]?|shows?|showed|reveal(?:s|ed)?|"
    r"indicates?|indicated|suggests?|suggested|confirms?|confirmed|demonstrates?|demonstrated)\s+"
    r"(?:that\s+)?)?",
    re.IGNORECASE,
)
# What may close it before the comparing words: "X is clearly", "X to", "X does".
_TAIL = re.compile(r"(?:\s+(?:to|is|are|was|were|does|do|did|has|have|\w+ly))+$", re.IGNORECASE)


_NOT_SUBJECT = re.compile(
    r"(?:despite|contrary|although|though|while|whereas|because|since|given|after|before|during|in|on|at|"
    r"for|with|from|under|over|across|among|between|by|as|if|when|once|unless|we|i|you|they|one|it|there|"
    r"here|yet|so|thus|hence)\b",
    re.IGNORECASE,
)
# "these results place G ahead", "our data show G ahead": the evidence and its verb, no side.
_EVIDENCE_VERB = re.compile(
    r"(?:these|those|the|our|such|all|both|this|that)\s+(?:[\w-]+\s+)?(?:results?|findings|data|experiments?|"
    r"evidence|numbers|figures|analys[ie]s|measurements|runs|outcomes?|observations?|tables?)\s+[a-z]+\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(
    r"\s*(?:and|or|nor|but|what|which|whether|how|why|who|whom|whatever|that)\b", re.IGNORECASE
)


_MODIFIERS = re.compile(r"(?:the|an?|this|that|its|their|our|any|some)(?:\s+(?-i:[a-z][\w-]*)){0,2}", re.I)
_NOUN_OF = re.compile(r"\s+(?:of|for|over|in favou?r of)\b", re.IGNORECASE)


# Where a subject ends: its modifiers ("X on accuracy") or its verb ("X is the best-performing G").
_SUBJECT_END = re.compile(r"\s+(?:by|on|in|at|with|for|across|when|while|is|are|was|were|has|have|had)\b")


def _sides(sentence: str, names: Resolver) -> list[str]:
    """The phrases a comparison sets against a group: its objects ("than X", "unlike X"), and its
    subject, the words before the comparing words ("X lags behind ...")."""
    masked = names.group_re.sub("G", sentence)
    out = [m.group(1) for m in _OBJECT.finditer(masked)] + _members(masked)
    raw = read_named(sentence, names).before
    before = "" if re.search(r"\bG\s*,\s*[a-z]\w*\s*$", raw) else raw.strip()  # "Our method, G, offers"
    subject = _TAIL.sub("", before[_LEAD.match(before).end() :]) if before else ""  # type: ignore[union-attr]
    subject = re.sub(
        r"^(?:the\s+)?(?:results?|scores?|performance|figures?|numbers?)\s+(?:for|of)\s+",
        "",
        subject,
        flags=re.I,
    )
    subject = "" if subject.endswith(":") else subject  # "Train time: no difference": a label, no side
    # "Despite a numerical edge ...", "We attribute no difference ...": an adverbial phrase or the
    # authors, not a system.
    subject = "" if _NOT_SUBJECT.match(subject) or _EVIDENCE_VERB.match(subject) else subject
    # "The apparent advantage of X": the words before a comparing noun are its modifiers, no side.
    said = cue(masked[len(raw) :]) if before else None
    if said and _MODIFIERS.fullmatch(subject) and _NOUN_OF.match(masked, len(raw) + said.end()):
        subject = ""
    subject = _SUBJECT_END.split(subject)[0]
    if subject and len(subject.split()) <= 4:
        out.append(subject)
    # "X by 5%", "X on accuracy": the side ends where its modifiers begin.
    out = [re.sub(r"\s*\([^()]*\)", "", x) for x in out]  # "X (0.90)": the figure is not the side
    out = [
        re.split(r"\s+(?:by|on|in|at|with|for|across|when|while|is|are|was|were|has|have|had)\b", x)[0]
        for x in out
    ]
    # A side ends where the next comparing words begin ("X neither beats nor trails G"); a verb's
    # object that opens with a conjunction is shared with another verb, and one that opens with a
    # wh-word is a clause ("than what we expected"): neither is a side.
    # "to a robust advantage for G": a determiner and an adjective of the comparing noun, no side
    cut = [x[: c.start()] if (c := cue(x)) else x for x in out]
    out = [
        x
        for x, whole in zip(cut, out, strict=True)
        if x == whole or not re.fullmatch(r"(?:an?|the|its|their|our|this)\s+[\w-]+\s+", x, re.I)
    ]
    return [x for x in out if not _CLAUSE.match(x)]


def absent_object(sentence: str, names: Resolver) -> tuple[str, ...]:
    """A side of a comparison names a system that is no group of the run (a run without groups,
    such as a failure report's, has none to tell it from)."""
    return _absent_side(_sides(sentence, names), names)


# A system brought in to be compared with ("we include X as an additional baseline", "X serves as
# a point of comparison"): a side of the comparisons to come, whatever the sentence states of it.
_COMPARATOR = re.compile(
    r"(?:^(?!" + _NOT_SUBJECT.pattern + r")|"
    r"\b(?:includ|add|consider|introduc|us|evaluat|report|run|train|benchmark|tak|treat)\w*\s+)"
    r"((?:[^\s,;:()]+\s+){0,3}?[^\s,;:()]+),?\s+(?:as|serves as|acts as)\s+(?:an?|the|our)\s+"
    r"(?:\w+\s+){0,2}?(?:baselines?|G|points? of comparison|comparison points?|comparators?|competitors?|"
    r"contenders?|references?)\b"
    # "We also evaluate X; it reaches ...", "We compare with X, which ...": a system brought in whole
    r"|\bwe\s+(?:also\s+|additionally\s+|further\s+)?(?:evaluat|includ|add|consider|benchmark|compar)\w*"
    r"\s+(?:(?:against|with|to)\s+)?((?!(?:whether|if|how|what|that|each|every|all|both)\b)"
    r"(?:an?\s+|the\s+)?[^\s,;:().]+(?:\s+[^\s,;:().]+){0,3}?)(?=\s*(?:[;:]|,\s*(?:which|whose|it)\b|\.?$))",
    re.IGNORECASE,
)


def absent_comparator(sentence: str, names: Resolver) -> tuple[str, ...]:
    """A system brought in as a comparator that is no group of the run."""
    masked = names.group_re.sub("G", sentence)
    # one brought in whole ("we also evaluate X") only where the sentence goes on to a result of it
    found = [
        m.group(1) or m.group(2)
        for m in _COMPARATOR.finditer(masked)
        if m.group(1) or literals(masked[m.end() :]) or cue(masked[m.end() :])
    ]
    return _absent_side([x for x in found if not re.search(r"\bG\b", x)], names)  # a group brought in


def _absent_side(sides: list[str], names: Resolver) -> tuple[str, ...]:
    if not names.labels:
        return ()
    for side in sides:
        phrase = re.sub(r"^by\s+", "", side)
        if (
            re.match(r"(?:the\s+|an?\s+|our\s+)?G\b", phrase)
            or literals(phrase)
            or METRIC_WORDS.search(phrase)
        ):
            continue
        if re.match(r"\w+ing\s+(?:the\s+)?G\b", phrase, re.IGNORECASE):
            continue  # "Swapping G for G", "Using G": an action on a group, not another system
        phrase = re.sub(r"\s*\bG\b.*", "", phrase)  # "a ResNet-18 baseline": the words before a role word
        if phrase and names.unresolved(phrase):
            groups = "; ".join(names.labels)
            return (f"compares with '{phrase}', which is no group of the run (its groups: {groups})",)
    return ()


def absent_member(sentence: str, names: Resolver) -> tuple[str, ...]:
    """A result given for a list of systems, one of which is no group of the run ("G and X reach
    0.84 and 0.80")."""
    masked = names.group_re.sub("G", sentence)
    if not names.labels or not literals(names.group_re.sub(" ", sentence)):
        return ()
    for member in _members(masked):
        if not (literals(member) or METRIC_WORDS.search(member)) and names.unresolved(member):
            groups = "; ".join(names.labels)
            return (f"gives a result for '{member}', which is no group of the run (its groups: {groups})",)
    return ()


_ACHIEVES = re.compile(
    r"^(?:[^,;:]*,\s*){0,2}?(?P<np>[^,;:]{2,60}?),?\s+"
    r"(?:obtain|reach|achiev|attain|scor|yield|record|hit|averag|post|deliver|register|land|get|got)\w*\b",
    re.IGNORECASE,
)


# "The mean accuracy of X is 0.70": a figure said of what the measure is "of".
_OF_IS = re.compile(
    r"\b(?:of|for)\s+(?P<np>[^,;:()]{2,50}?)\s+(?:is|was|are|were|reads?|comes? to|stands? at|equals?)\s+"
    r"(?:about\s+|around\s+|roughly\s+)?[-−]?\d",
    re.IGNORECASE,
)


# A sentence's opening phrase that is not its subject: "On accuracy, ...", "Averaged over seeds, ...".
_ADVERBIAL = re.compile(
    r"(?:on|in|at|for|with|across|under|over|after|before|when|while|compared|relative|unlike|as|by|from|"
    r"during|based|taken|comparing|given|following|according|within|throughout|together|which|that|who|whose|"
    r"to|of|overall|notably|however|here|finally|averaged|measured|evaluated|tested|again|also|thus)\b",
    re.IGNORECASE,
)


def absent_result(sentence: str, names: Resolver) -> tuple[str, ...]:
    """A result said of something that is no group of the run ("A ResNet-18 reaches 0.91", "Kernel
    SVM, a strong baseline, reaches 0.69", "a ridge-regression baseline reaches 0.70", "the mean
    accuracy of a ridge regressor is 0.70")."""
    if not names.labels:
        return ()
    nps = [m.group("np").strip() for m in _OF_IS.finditer(sentence)]
    m = _ACHIEVES.match(sentence)
    if m is not None and literals(sentence[m.end() :]):
        lead = sentence.split(",", 1)[0]
        nps += [m.group("np").strip(), lead.strip() if "," in sentence[: m.start("np")] else ""]
    for np in nps:
        if not np or _ADVERBIAL.match(np) or METRIC_WORDS.search(np) or names.metrics(np):
            continue
        masked = names.group_re.sub("G", np)
        if re.match(r"(?:the\s+|an?\s+|our\s+|this\s+)?G\b", masked, re.IGNORECASE):
            continue
        np = re.sub(r"\s*\bG\b.*", "", masked)  # "a ridge baseline": the words before a role word
        if np and names.unresolved(np):
            groups = "; ".join(names.labels)
            return (f"gives a result for '{np}', which is no group of the run (its groups: {groups})",)
    return ()
