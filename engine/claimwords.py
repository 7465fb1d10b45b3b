"""The words a side of a comparison may use without naming a system: function words, the verbs a
result is stated with, and the generic nouns and adjectives of experimental prose ("chance", "the
other configuration", "the previous stage", "a wide margin"). A side whose other words are all the
run's own (its groups' names, labels and aliases, its metrics) names something of the run; a word
outside both names something else, whatever family of model it belongs to. See docs/review.md,
"Integrity checks".
"""

from __future__ import annotations

import re

_FUNCTION = """
a an the this that these those its it their they them we us our ours his her he she one ones
both either neither each every all any some other others another same such own rest remaining
former latter what which who whom whose where when whenever while whereas if then than as so too
although though because since unless until whilst once
very also only even just still again already almost nearly roughly about around approximately
of to in on at by for with without from into onto upon than and or but nor not no vs versus via
per under over between among amongst across against after before during through throughout within
beyond below above behind ahead up down out off near toward towards like unlike despite
is are was were be been being am has have had having do does did done can could will would may
might must shall should get gets got getting make makes made take takes took taken keep keeps kept
there here how why whether thus hence therefore however overall notably indeed instead rather
""".split()
# The verbs and auxiliaries a result is stated with ("G and its ablation end up level").
_VERBS = """
reach reaches reached reaching perform performs performed performing score scores scored scoring
achieve achieves achieved attain attains attained obtain obtains obtained record records recorded
stay stays stayed remain remains remained land lands landed come comes came finish finishes
finished rank ranks ranked show shows showed shown give gives gave given yield yields yielded
produce produces produced lead leads led behave behaves behaved differ differs differed end ends
ended sit sits lie lies fall falls fell tie ties tied settle settles settled hold holds held
see sees saw seen find finds found observe observes observed report reports reported compare
compares compared use uses used using train trains trained trail trails trailed lag lags lagged
match matches matched beat beats beaten win wins won lose loses lost gain gains gained
go goes went gone stand stands stood appear appears appeared seem seems seemed prove proves proved
turn turns turned run runs ran do
""".split()
# Generic nouns and adjectives of experimental prose: what may stand on a side of a comparison
# without being a system ("better than chance", "the other configuration", "a wide margin").
_GENERIC = """
chance expectation expectations expected prediction predicted hope hoped hypothesis null zero
baseline baselines method methods approach approaches model models system systems variant variants
version versions configuration configurations config setting settings condition conditions group
groups arm arms alternative alternatives counterpart counterparts competitor competitors option
options choice choices candidate candidates contender contenders pair pairs two three four
run runs seed seeds replicate replicates stage stages node nodes draft drafts search budget budgets
level levels value values figure figures number numbers score scores result results performance
mean means average averages median reference control comparison subject subjects margin margins gap gaps
difference
differences error errors loss losses rate rates training test tests testing validation data dataset
datasets set sets split splits example examples sample samples fold folds trial trials time times
case cases measure measures metric metrics prior previous earlier later initial final original
default standard plain simple vanilla step steps round rounds iteration iterations epoch epochs
noise variance spread ablation ablations study studies work literature paper papers proposed
proposal idea ideas best worst top bottom first second third last lead leader winner winners loser
losers runner runners winning losing leading trailing term terms respect regard way ways kind kinds part
parts point points
percent percentage fraction share amount size order ordering ranking table row column
small smaller smallest large larger largest slight slightly clear clearly marked wide narrow
substantial modest considerable significant significantly noticeable meaningful notable tiny big
huge strong stronger strongest weak weaker weakest high higher highest low lower lowest better
worse good bad great greater greatest few fewer fewest many more most less least much little
new old full whole entire single multiple several various different similar same usual typical
main primary key headline current present tuned untuned best-performing selected chosen
statistical statistically evidence effect effects benefit benefits advantage advantages edge lead
improvement improvements gain gains drop drops increase decrease change changes shift boost cost
well relative compared respectively given alone together
welch student mann whitney wilcoxon permutation bootstrap statistic statistics hedges cohen
ci sd se std dev deviation interval intervals confidence df freedom degrees verdict mean
stage stages method group name label labels configuration metric
accuracy accuracies held heldout unseen hold holdout generalisation generalization
evaluation evaluations experiment experiments experimental finding findings analysis analyses
observation observations conclusion conclusions claim claims support supports supported detriment
knowledge expense favour favor reliable consistent selection protocol regime
""".split()
GENERIC_WORDS = frozenset(_FUNCTION) | frozenset(_VERBS) | frozenset(_GENERIC)
# The words after which a noun phrase may start: function words and the verbs of results.
PHRASE_OPENERS = frozenset(_FUNCTION) | frozenset(_VERBS)

_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def words(phrase: str) -> list[str]:
    """The lower-case words of `phrase`, hyphenated compounds split, possessives dropped."""
    return [re.sub(r"'s?$", "", w).lower() for w in _WORD.findall(phrase.replace("’", "'"))]


def singular(word: str) -> str:
    """ "accuracies" -> "accuracy", "regressors" -> "regressor"."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def unknown(phrase: str, known: frozenset[str]) -> list[str]:
    """The words of `phrase` that are neither generic nor in `known` (nor adverbs in -ly)."""
    out = []
    for w in words(phrase):
        if len(w) <= 1 or w.endswith("ly") or w in GENERIC_WORDS or w in known or singular(w) in known:
            continue
        if singular(w) in GENERIC_WORDS:
            continue
        out.append(w)
    return out
