"""Reading a sentence for what it compares, by the structure of comparisons rather than a list of
phrases: comparatives ("-er than", "more/less X than", "superior to"), verbs of winning, losing,
gaining or lagging in any inflection ("edges out", "trails", "lost to"), rankings (superlatives,
"ranks first"), changes in %, points or x-fold, equivalence and denial ("no meaningful
difference", "on par", "did not beat"), passives ("is outperformed by") and fronted references
("Compared with X, Y ..."). The groups a sentence names are masked before it is read, so a label
such as "best of tuning" is never taken for a ranking. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Said = Literal["better", "worse", "higher", "lower", "no detectable difference", "not better", "not worse"]

# Quality words: better or worse whatever the metric's direction. Magnitude words: higher or lower,
# which the metric's direction turns into better or worse.
_QUALITY_UP = (
    r"better|out-?(?:perform|do|did|shin|shone|class|strip|pac|scor|rank|run|ran|compet|match|play)\w*|"
    r"surpass\w*|beat(?:s|ing|en)?|exceed\w*|edg(?:e|es|ed|ing)"
    r"(?: out)?|improv\w*|superior(?:ity)?|ahead|wins?|winning|won|tops|topped|lead(?:s|ing)?(?! to)|"
    r"led(?! to)|"
    r"advantage|gain(?:s|ed|ing)?|stronger|strongest|dominat\w*|best|boost\w*|the top(?![-\s]*\d)|"
    r"benefit\w*|favou?r(?:s|ed|ing|abl[ey])?|faster|fastest|quicker|preferable|excel\w*|better(?:s|ed)|"
    r"on top(?! of)|(?:ranks?|ranked|ranking|places?|placed|sits?|sat|finish(?:es|ed)?) above|upper hand|"
    r"best(?:s|ed)|pays? off|paid off|winners?|step up|leav(?:e|es|ing) G behind|left G behind|"
    r"more (?:accurate|effective|robust|reliable|"
    r"precise|efficient|stable|competitive)"
)
_QUALITY_DOWN = (
    r"worse|worst|under-?(?:perform|deliver|shoot|shot|achiev|whelm)\w*|inferior|second to|runner-up|"
    r"step down|(?:ranks?|ranked|ranking|places?|placed|sits?|sat|finish(?:es|ed)?|lands?|landed) below|"
    r"(?:comes?|came|ranks?|ranked|finish(?:es|ed)?|places?|placed|ends?|ended) (?:in )?(?:second|last)|"
    r"(?:gives?|gave|giving) up|conced\w*|ced(?:e|es|ed|ing)\b|trail\w*|lag(?:s|ged|ging)?|behind|"
    r"fall(?:s|ing)? (?:\S+ )?(?:short|behind|back)|"
    r"fell (?:\S+ )?(?:short|behind|back)|los(?:e|es|t|ing)(?! \d)|weaker|weakest|hurt\w*|"
    r"degrad\w*|deficit|"
    # "G would need a 30% improvement to match G": what it lacks to reach the other.
    r"(?:need(?:s|ed)?|requir(?:e|es|ed)|ha(?:ve|s|d) to) (?:\S+ ){0,6}?to "
    r"(?:match|reach|equal|catch up|close the gap)|"
    r"disadvantage|penalt\w*|slower|slowest|poor(?:er|est|ly)?|deteriorat\w*|worsen\w*|losers?|"
    r"less (?:accurate|effective|robust|reliable|precise|efficient|"
    r"stable|competitive)"
)
# "above G", "below G", "above the level of G": a position relative to a group is a comparison of
# magnitudes.
_OF_G = r" (?:that of |the (?:[\w()-]+ ){1,3}?of (?:the )?|the )?G\b"
_MAGNITUDE_UP = r"higher|highest|greater|greatest|larger|largest|bigger|above(?=" + _OF_G + ")"
_MAGNITUDE_DOWN = r"lower|lowest|smaller|smallest|fewer|below(?=" + _OF_G + ")"
# "more favourable", "less competitive": a quality, whatever the metric's direction.
_QUALITY_ADJ = re.compile(
    r"\s+(?:accurate|effective|robust|reliable|precise|efficient|stable|competitive|favou?rable|"
    r"successful|useful|consistent|capable|performant|attractive|suitable)\b",
    re.I,
)
# Verbs of change compare only where a quantity is named ("reduces the error", "drops by 3 points").
_CHANGE_UP = r"increas\w*|rais(?:e|es|ed|ing)|rose|rises?|climb(?:s|ed|ing)?|gr(?:ow|ows|ew|own)"
_CHANGE_DOWN = (
    r"decreas\w*|reduc\w*|lower(?:s|ed|ing)|drop(?:s|ped|ping)?|declin\w*|shrank|shrinks?|cut(?:s|ting)?|"
    r"fall(?:s|ing)?|fell|dip(?:s|ped)?"
)
_CHANGE_OBJECT = re.compile(r"\s+(?:by|of|in|to|from|the|its|their|our|G)\b", re.I)
_EQUAL = (
    r"no (?:\w+ ){0,3}differences?|(?:did|does|do) not (?:\w+ )?differ\w*|indistinguishable|on (?:a )?par|"
    r"comparabl[ey]|similar(?:ly)?|equivalent(?:ly)?|"
    r"(?:the same|equal) (?:\w+ )?(?:performance|accuracy|scores?|"
    r"levels?|results?|means?)|ti(?:e[sd]?|ing)|parity|within (?:the )?(?:[\w-]+ )?noise|"
    r"statistically (?:equal|tied)|(?:roughly|nearly|essentially|about|approximately) equal|"
    r"no worse|as (?:good|accurate|effective|strong|well|fast|robust|reliable) as|"
    r"not (?:statistically )?significantly (?:\w+ )?(?:differ\w*|better|worse|higher|lower)|"
    r"neither .{0,40}? nor|"
    r"(?:end(?:s|ed)? up|draw(?:s|n)?|drew|are|is|were|was|finish(?:es|ed)?|roughly|essentially) level\b"
)
# A superiority denied ("no benefit of G over G", "no better than G"): not better, which a loss
# also satisfies.
_NO_GAIN = r"no (?:\w+ ){0,2}(?:gain|advantage|improvement|benefit|edge)s?|no better"
# Verbs of matching a group: "G matches G" says no difference, "G cannot keep up with G" that the
# first is worse.
_PAR = (
    r"(?:match(?:es|ed|ing)?|rival(?:s|led|ed|ling|ing)?|equal(?:s|led|ed|ling|ing)?|"
    r"keeps? up with|kept up with|"
    r"catch(?:es)? up (?:with|to)|caught up (?:with|to)|measures? up to|"
    # "reaches the validation accuracy of G"
    r"reach(?:es|ed|ing)? the (?:[\w()-]+ ){1,4}?of|"
    r"compet(?:e|es|ed|ing) with)"
    r"(?= (?:the )?G\b)"
)
# Coming close to a group: denied, the first is worse; said, it may still be worse ("comes close to
# G but trails"), so nothing is asserted.
_NEAR = r"(?:comes?|came|coming|gets?|got|getting) (?:\w+ )?close to(?= (?:the )?G\b)"
# A word inside a hyphenated compound ("gradient-boosted", "error-reducing") is no cue.
_CUE = re.compile(
    "|".join(
        rf"(?P<{kind}>(?<!-)\b(?:{words})\b)"
        for kind, words in (
            ("par", _PAR),
            ("near", _NEAR),
            ("nob", _NO_GAIN),
            ("eq", _EQUAL),
            ("up", _QUALITY_UP),
            ("down", _QUALITY_DOWN),
            ("hi", _MAGNITUDE_UP),
            ("lo", _MAGNITUDE_DOWN),
            ("more", "more"),
            ("less", "less"),
            ("chi", _CHANGE_UP),
            ("clo", _CHANGE_DOWN),
        )
    )  # fmt: skip
    # "G > G", "G < G": an order between two groups, written as in mathematics.
    + r"|(?<=G)\s*(?:(?P<gt>[>≻])|(?P<lt>[<≺]))(?=\s*(?:the\s+)?G\b)",
    re.IGNORECASE,
)
_THAN = re.compile(
    r"\b(?:\w{2,}er|more \w+|less \w+)\s+than\b|\b(?:superior|inferior|preferable)\s+to\b", re.I
)
_RELATION = re.compile(
    r"\b(?:than|over(?!\s+(?:\d|(?:\w+\s+){0,2}(?:seeds|runs|replicates|repetitions|trials|folds)\b))"
    r"|against|versus|vs\.?|compared (?:with|to)|relative to|unlike)\s",
    re.I,
)
_RANK = re.compile(
    r"\b(?:rank(?:s|ed)? (?:first|top|highest)|first place|c[oa]mes? (?:out )?first|top-ranked)\b"
    r"|\bG,? (?:\w+ )?first\b(?! (?:time|stage|step|round))",
    re.I,
)
# A comparison inside a denied clause: "no evidence that G beats G", "we cannot claim that ...".
_NEGATED_CLAUSE = re.compile(
    r"\b(?:not|no|never|cannot|without|fail(?:s|ed)? to|unclear|unknown|doubt\w*)\b(?:(?!\bG\b)[^.;:]){0,40}?"
    r"\b(?:that|whether|if)\b[^.;:,]{0,50}$"
    # "we do not find G to be better", "nor can G be called better": a judgement denied
    # "we do not see G beating G": the same, with the comparing verb's participle
    r"|\b(?:not|never|cannot|nor)\s+(?:\w+\s+){0,2}?(?:find|consider|deem|judge|call|rate|regard|see|show|"
    r"observe|notice|witness)\w*\s+(?:the\s+)?G\s+(?:(?:to\s+be|as)\s+(?:\w+\s+){0,2})?$"
    # "it would be premature to call G better": a judgement said to be unwarranted
    r"|\b(?:premature|too early|unwarranted|unjustified|unsupported|misleading|incorrect|wrong|hard|"
    r"difficult|impossible)\s+to\s+(?:call|claim|say|conclude|declare|deem|consider|label|describe|rate|regard|state)\b"
    r"[^.;:]{0,60}$",
    re.I,
)
# A magnitude or change of an error ("reduces the error", "fewer mistakes"): lower is better.
_ERROR_NOUN = re.compile(
    r"\s+(?:(?:the|its|their|our)\s+)?(?:[\w-]+\s+){0,2}?(?:errors?|loss(?:es)?|mistakes|misclassif\w*)\b",
    re.I,
)
# "The error rate of G is lower": the error is what the magnitude is of.
_ERROR_TOPIC = re.compile(
    r"\b(?:errors?|loss(?:es)?|mistakes)\b(?: rate)?(?: of G| for G)?(?:'s)? (?:is|are|was|were)\b.*$", re.I
)
# "Errors drop by a factor of 2": an error as the subject of a change.
_ERROR_SUBJECT = re.compile(r"\b(?:errors?|loss(?:es)?|mistakes|misclassif\w*)(?: rates?)?\s+$", re.I)
_NEGATION = re.compile(
    r"\bwhether\b.*$|\b(?:not|never|no|neither|nor|cannot|without|fail(?:s|ed)? to)\b(?:\s+[\w-]+){0,4}\s*$"
    r"|n't\s*(?:\w+\s*)?$",
    re.I,
)
# The null hypothesis rejected, actively or in the passive ("... is rejected"); a denial of the
# rejection ("cannot reject", "is not rejected", "retains the null") is a hedge.
_SIGNIFICANT = re.compile(
    r"\b(?:statistically )?significant(?:ly)?\b|\bp\s*[<≤]\s*0?\.0\d"
    r"|\breject\w* (?:the null|(?:the |this |our )?hypothes[ie]s\b|"
    r"(?:the )?(?:equal|identical|no difference))"
    # a test as the subject that finds a difference
    r"|\btests? (?!not\b|never\b)(?:\w+ )?(?:detects?|detected|finds|found|reveals?|revealed|shows?|showed|"
    r"identifie[sd]) an? (?:\w+ )?(?:difference|effect)\b"
    r"|\bnull hypothes[ie]s\b.{0,80}?\b(?:is|was|are|were|be|been|gets?|got)\s+rejected"
    r"|\bstatistically (?:meaningful|reliable|robust)|\b(?:statistical|with) significance\b"
    # a test passed: "clears the significance threshold", "survives significance testing", "significance
    # holds", "statistically distinguishable"
    r"|\b(?:clear|pass|meet|cross|surviv|withstand|exceed)\w*\s+(?:the\s+)?(?:statistical\s+)?significance\b"
    r"|\bsignificance\s+(?:holds|held|is reached|was reached)\b|(?<!in)\bdistinguishable\b"
    # "reliably better": a difference said to be real
    r"|(?<!not )\breliabl[ey] (?:better|worse|higher|lower|ahead|behind|outperform\w*|superior|inferior)"
    r"|\b(?:reach|attain|achiev)\w* (?:statistical )?significance\b"
    # a difference said not to be chance's
    r"|\b(?:unlikely|not)\s+(?:to\s+be\s+)?(?:due|attributable)\s+to\s+chance|\bbeyond chance\b",
    re.I,
)
# A p-value printed over the usual level: what the test found, not a hedge in words.
_P_OVER = r"\bp\s*[=>≥]\s*0?\.(?:[1-9]|0[5-9])"
_NOT_SIGNIFICANT = re.compile(
    r"\b(?:not|no|non-?|in|without|lack(?:s|ed|ing)?)\s*(?:statistical(?:ly)?\s+)?significan\w*|"
    r"\b(?:not|never|fail\w* to|n't|short of|lacks?|without)\s+(?!only\b)(?:\w+\s+){0,2}?"
    r"(?:statistical(?:ly)?\s+)?significan\w*|"
    r"\b(?:absence|lack) of (?:an?\s+|any\s+)?(?:statistically\s+)?significan\w*|"
    r"\bn\.s\.|" + _P_OVER + r"|within (?:the )?(?:[\w-]+ )?noise|"
    r"\bnumerically\b|\bnominally\b|"
    r"not (?:reliably|statistically)|\b(?:not|cannot|can't|unable to|fail\w* to)\s+(?:be\s+)?reject"
    r"|\b(?:retain\w*|accept\w*) the null",
    re.I,
)
# "best of 12 nodes", "the stage's best node": how a group was chosen, not a ranking of groups.
# What a null hypothesis says ("that G and G share one mean") is what the test rejects or not.
_PROVENANCE = re.compile(
    r"\bbest (?:of\b|node)|(?:(?<=\bhypothesis )|(?<=\bnull ))of (?:no \w+|equal(?: (?!G\b)\w+){0,3})"
    r"|(?<=\bnull hypothesis )that\b.*?(?=\b(?:is|was|are|were|can|cannot|could|must|be)\b|$)",
    re.I,
)
# "Compared with G, G ...", "Replacing G with G ...", "Taking G as the reference, G ...": the group
# named first is the reference.
_FRONTED = re.compile(
    r"^\W*(?:compared (?:with|to)|relative to|against|versus|unlike|"
    r"over(?!\s+(?:\d|all|every|each|the (?:\d|\w+ (?:seeds|runs))))|"
    r"in contrast (?:to|with)|"
    r"as opposed to)\b"
    r"|^(?:(?!\bG\b).)*?\bG,? (?:is|serves as|acts as|as) (?:the |a |our )?(?:\w+ )?"
    r"(?:reference|baseline|anchor|yardstick|point of (?:comparison|reference)|comparison point|"
    r"starting point)\b"
    r"|\b(?:replac|substitut)\w* (?:the )?G (?:with|by) (?:the )?G"
    r"|\b(?:switch|mov|go|chang|transition)\w* from (?:the )?G to (?:the )?G"
    r"|\bfrom\b[^,;]{0,30}?\bG\b[^,;]{0,30}?\bto\b[^,;]{0,30}?\bG\b"
    r"|\b(?:swap|exchang|trad)\w* (?:the )?G (?:for|with) (?:the )?G"
    r"|\bG (?:is|are|was|were|gets?) (?:replaced|substituted|swapped) (?:by|with|for) (?:the )?G",
    re.I,
)


# "G differs from G at the 0.05 level": a difference said to hold at a significance level.
_AT_LEVEL = re.compile(r"\bat the (?:0?\.\d+|\d+\s*%) (?:significance |confidence |α )?level\b", re.I)
# A test said to confirm a direction ("the test confirms that G beats G") asserts its significance.
_CONFIRMED = re.compile(
    r"\btest(?:s|ing)?\b[^;]{0,40}?\b(?:confirm|establish|verif|prov)\w*"
    r"|\b(?:confirm|establish|verifi)\w* (?:by|with|through) (?:a |the |our )?(?:\w+ ){0,2}test\b",
    re.I,
)


# "The better configuration (on X) is G", "what performs best is G": the comparing word stands in
# a subject that names no group, and the group after the copula is the one it is said of.
_SUBJECT_NP = re.compile(r"(?:^|[,;:(])\s*(?:\w+\s+){0,3}?(?:the|what|whichever)\b[^G,;:]*$", re.I)
_COPULA_G = re.compile(
    r"(?:\s+(?!G\b)[^\s;:]+){0,8}?\s+(?:is|was|are|were|remains?|remained|turns? out to be|proves? to be)"
    r"\s+(?:\w+ly\s+)?(?:the\s+)?G\b",
    re.I,
)


def _copular_subject(masked: str, start: int, end: int) -> int | None:
    """The index of the group a comparing word in a copula's subject is said of ("the better
    configuration is G": that G), if the word stands in one."""
    if not _SUBJECT_NP.search(masked[:start]):
        return None
    m = _COPULA_G.match(masked, end)
    return len(re.findall(r"\bG\b", masked[: m.end()])) - 1 if m else None


# A p-value as the subject of a comparing word is compared with its threshold, not a group.
_P_SUBJECT = re.compile(r"(?:^|[,;:]\s*)(?:\w+\s+){0,3}?p(?:[- ]values?)?\b(?:(?!\bG\b)[^;:,()])*$", re.I)
# A magnitude of the experiment's own size ("a larger number of seeds", "smaller sample sizes").
_RESOURCE = re.compile(
    r"\s+(?:(?:number|amount|count)\s+of\s+(?:\w+\s+)?(?:seeds|runs|replicates|repetitions|samples|trials|"
    r"experiments|nodes|epochs|examples|data)|(?:seed|sample|budget|run)\s+(?:counts?|sizes?)|budgets?)\b",
    re.I,
)


# An expectation or aim in the comparing words' own clause: what was hoped for, not a result.
_EXPECTED = re.compile(
    r"\b(?:expect\w*|hop(?:e|es|ed|ing)|anticipat\w*|predict(?:s|ed|ing)?|intend\w*|aim(?:s|ed)? to)\b"
    r"[^,;:.]*$",
    re.I,
)
_IF_ANY = re.compile(r"[^,;:.]{0,40}?,\s*if any\b", re.I)
# "Not found: a significant effect of G vs G": a denial heading the whole sentence.
_DENIED_LABEL = re.compile(r"^\W*(?:not|no|never)\s+(?:\w+\s+){0,2}?\w+\s*:", re.I)


def cue(text: str) -> re.Match[str] | None:
    """The first word of `text` that compares (a verb of winning, a comparative, "on par")."""
    return _CUE.search(text)


@dataclass(frozen=True)
class Reading:
    said: Said | None  # of the first-named group, before any reversal of the order
    comparison: bool  # the sentence relates two groups or values, whatever its words
    significant: bool  # it asserts a significant difference
    hedged: bool  # it says the difference is not significant (a direction is then only the means')
    fronted: bool  # "Compared with X, Y ...": the first-named group is the reference
    before: str = ""  # the words before those that say `said`: one side of the comparison
    of_group: int | None = None  # which named group (0: the first) `said` is of, when the structure says


def read(masked: str, measured: bool = True, metric: bool = False) -> Reading:
    """What `masked` (the sentence with each group it names replaced by "G") says; `measured`:
    it prints a number, `metric`: it names a metric (then a verb of change compares)."""
    named = masked.count("G")  # before a null hypothesis's content is dropped
    if _DENIED_LABEL.match(masked):
        return Reading(None, True, False, True, False)
    masked = _PROVENANCE.sub(" ", masked)
    hedged = bool(_NOT_SIGNIFICANT.search(masked))
    asserted = _SIGNIFICANT.search(_NOT_SIGNIFICANT.sub(lambda x: " " * len(x.group(0)), masked))
    said, before, end, of_group, near = _first_cue(masked, measured, metric, named)
    if said is None and _RANK.search(masked):
        said = "better"
    # "We do not find G to be significantly better": the significance is denied with the rest.
    denied = said in ("not better", "not worse")
    significant = asserted is not None and not (
        denied and (asserted.start() < end or not re.search(r"[;:]", masked[end : asserted.start()]))
    )
    # A p-value over the level printed beside "at the 0.05 level" is what the test found; the words
    # are what the sentence claims.
    worded = bool(_NOT_SIGNIFICANT.search(re.sub(_P_OVER + r"\d*", " ", masked)))
    significant = (
        significant
        or said in ("better", "worse", "higher", "lower")
        and bool(_CONFIRMED.search(masked))
        or not worded
        and said not in ("not better", "not worse", "no detectable difference")
        and bool(_AT_LEVEL.search(masked))
    )
    comparison = (
        said is not None
        or near
        or _compares(masked, named, significant, measured)
        # "the difference in accuracy is significant": a comparison, whoever it names
        or significant
        and bool(re.search(r"\b(?:differen\w*|gap|effect|improvement|gain|advantage)\b", masked, re.I))
    )
    return Reading(said, comparison, significant, hedged, bool(_FRONTED.search(masked)), before, of_group)


def _first_cue(
    masked: str, measured: bool, metric: bool, named: int
) -> tuple[Said | None, str, int, int | None, bool]:
    """The first word of `masked` that says a direction: what it says, the words before it, where
    it ends, which named group it is of, and whether a "comes close to" came first."""
    before, near = "", False
    for m in _CUE.finditer(masked):
        # "G > G": an order of quality, whatever the metric's direction ("0.12 s vs. 0.33 s")
        kind = {"gt": "up", "lt": "down"}.get(m.lastgroup or "", m.lastgroup or "")
        if _P_SUBJECT.search(masked[: m.start()]):
            continue  # "the p-value of 0.72 exceeds 0.05": a test against its threshold
        if kind in ("hi", "lo") and _RESOURCE.match(masked, m.end()):
            continue  # "a larger number of seeds": the experiment's size, no result
        if _EXPECTED.search(masked[: m.start()]) or _IF_ANY.match(masked, m.end()):
            continue  # "one might expect G to improve ...", "G's gain, if any, ...": nothing asserted
        if kind == "near" and not near:  # "X comes close to G": a comparison that asserts no order
            near, before = True, masked[: m.start()]
        if kind in ("more", "less") and _QUALITY_ADJ.match(masked, m.end()):
            kind = "up" if kind == "more" else "down"
        elif kind in ("more", "less") and not re.match(r"\s+\w+\s+than\b", masked[m.end() :]):
            continue
        if kind in ("chi", "clo") and not (measured and _CHANGE_OBJECT.match(masked, m.end()) or metric):
            continue
        if kind in ("chi", "clo") and re.match(r"\W*\w+ing$", masked[: m.end()]):
            continue  # "Dropping the random features ...": an action on the method, no change of a quantity
        if kind in ("hi", "lo", "more", "less", "chi", "clo") and (
            _ERROR_NOUN.match(masked, m.end())
            or _ERROR_TOPIC.search(masked[max(0, m.start() - 60) : m.start()])
            or kind in ("chi", "clo")
            and _ERROR_SUBJECT.search(masked[: m.start()])
        ):
            kind = "down" if kind in ("hi", "more", "chi") else "up"
        negated = bool(
            _NEGATION.search(masked[max(0, m.start() - 45) : m.start()])
            or _NEGATED_CLAUSE.search(masked[max(0, m.start() - 100) : m.start()])
        )
        said = _said(kind, negated, _passive(masked, m.start(), m.end()))
        if said is not None:
            of_group = _copular_subject(masked, m.start(), m.end()) if named == masked.count("G") else None
            if re.fullmatch(r"favou?r(?:s|ed|ing)?", m.group(0), re.I) and re.match(
                r"\s+(?:of\s+)?(?:the\s+)?G\b", masked[m.end() :]
            ):
                of_group = masked[: m.end()].count("G")  # "favouring G", "in favour of G": that G wins
            return said, masked[: m.start()], m.end(), of_group, near
    return None, before, len(masked), None, near


def _compares(masked: str, named: int, significant: bool, measured: bool) -> bool:
    """Whether `masked` relates two groups or values without a word that says a direction."""
    return (
        bool(_THAN.search(masked))
        or bool(re.search(r"\bbetween G and\b|\bG (?:\w+ )?(?:match(?:es|ed)|rivals?|equals)\b", masked))
        or bool(re.search(r"\bG,?\s+(?:then|followed by)\s", masked))  # a ranking: "G, then X, then G"
        or bool(re.search(r"\b(?:replac|substitut|swapp?)\w* (?:the )?G (?:with|by|for)\b", masked, re.I))
        or named >= 2
        and bool(
            _RELATION.search(masked)
            or re.search(r"\bbetween G\b|\b(?:difference|gap|margin|minus)\b", masked)
            or significant
        )
        # "G reaches 0.85 against 0.91": one group named, the other's figure printed.
        or measured
        and "G" in masked
        and bool(_RELATION.search(masked))
    )


# A verb of defeating in the passive without its agent ("G is outperformed on accuracy"): the
# subject lost. Verbs whose object is the winner ("G is favoured") keep their sense.
_DEFEATED = re.compile(
    r"(?:out\w+ed|beaten|surpassed|exceeded|bested|topped|edged(?: out)?|dominated)$", re.IGNORECASE
)
_BE = re.compile(r"\b(?:is|are|was|were|be|been|being|gets?|got)\s+(?:\w+ly\s+)?$", re.I)


def _passive(masked: str, start: int, end: int) -> bool:
    """ "outperformed (on accuracy,) by G": the group after "by" is the one that wins; only a
    verb's participle is passive ("left behind by G": "behind" says the first group is behind)."""
    participle = re.search(r"(?:ed|en|ne|wn|st|ht)(?: out)?$", masked[start:end], re.I)
    by = r"(?:\s+(?:on|in|at|for|across|over)\s+[^,;G]{1,40}?)?,?\s+by\s+(?:the\s+)?G\b"
    if participle and re.match(by, masked[end:]):
        return True
    return bool(_DEFEATED.search(masked[start:end]) and _BE.search(masked[:start]))


def _said(kind: str, negated: bool, passive: bool) -> Said | None:
    if kind == "par":
        return "worse" if negated else "no detectable difference"
    if kind == "eq":
        return "no detectable difference"
    if kind == "near":
        return "worse" if negated else None
    if kind == "nob":
        return "not worse" if passive else "not better"
    up = kind in ("up", "hi", "more", "chi")
    if passive:
        up = not up
    if kind in ("up", "down"):
        if negated:
            return "not better" if up else "not worse"
        return "better" if up else "worse"
    if negated:
        return None  # "not higher" says too little to check
    return "higher" if up else "lower"
