"""The claim ledger: every comparison a paper about this idea may state, with its test and verdict.

Each stage's aggregation compares its subject group (the stage's replicated best) with the other
groups, on every metric. A claim holds both groups (n, mean, sd: none for a group of one run),
the metric, its direction and role (the metric the search selected on, a held-out test metric,
or another one), the test (statistic, df, two-sided p, its log), the mean difference with its
95% interval, Hedges' g with its 95% interval, whether the two groups had the same search budget,
and the verdict. `verdict` is the one rule every writer, the reviewer and the view use.

The headline claim is the idea's hypothesis: the method against the (tuned) baseline on the
held-out test metric where the run has one, else on the selection metric (and the ledger says
so). Written beside the paper as ledger.json; see docs/writeup.md, "The claim ledger".
"""

from __future__ import annotations

import math
import re

import numpy as np
from scipy import stats

from engine.claims import ALPHA, Claim, GroupSummary, Ledger, Role, verdict
from engine.node import Direction
from writeup.run_reader import GroupStats, IdeaResults, StageResult

_TEST_METRIC = re.compile(r"(?:^|[_\W])(?:test|heldout|held_out)(?:[_\W]|$)", re.IGNORECASE)
_BEST_OF = re.compile(r"\s*\(best of ([^()]*)\)\s*$")


def metric_role(name: str, primary: str) -> Role:
    if name == primary:
        return "selection"
    return "test" if _TEST_METRIC.search(name) else "other"


def compare(
    a: GroupStats, b: GroupStats, test: str
) -> tuple[float | None, float | None, float | None, float | None]:
    """(statistic, df, p, log10 p) of subject `a` against reference `b`; Nones when untestable
    (a group of fewer than two runs, or no spread in either group)."""
    x, y = np.asarray(a.values, float), np.asarray(b.values, float)
    if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return None, None, None, None
    if test == "mannwhitney":
        mw = stats.mannwhitneyu(x, y, alternative="two-sided")
        p = float(mw.pvalue)
        return float(mw.statistic), None, p, math.log10(p) if p > 0 else -math.inf
    res = stats.ttest_ind(x, y, equal_var=test == "student")
    t, df = float(res.statistic), float(res.df)
    # log p from the t distribution's log survival function: exact where p itself underflows.
    log_p = (math.log(2) + float(stats.t.logsf(abs(t), df))) / math.log(10)
    return t, df, float(res.pvalue), log_p


def diff_interval(a: GroupStats, b: GroupStats, level: float = 0.95) -> tuple[float, float] | None:
    """Welch's interval of the mean difference (subject minus reference)."""
    x, y = np.asarray(a.values, float), np.asarray(b.values, float)
    if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return None
    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(level)
    return float(ci.low), float(ci.high)


def hedges_g(a: GroupStats, b: GroupStats) -> float | None:
    na, nb = len(a.values), len(b.values)
    if na < 2 or nb < 2:
        return None
    pooled = math.sqrt(((na - 1) * a.std**2 + (nb - 1) * b.std**2) / (na + nb - 2))
    if pooled == 0:
        return None
    correction = 1 - 3 / (4 * (na + nb) - 9)
    return (a.mean - b.mean) / pooled * correction


def g_interval(g: float, na: int, nb: int, level: float = 0.95) -> tuple[float, float]:
    """Normal-approximation interval of Hedges' g (Hedges & Olkin's large-sample variance)."""
    se = math.sqrt((na + nb) / (na * nb) + g * g / (2 * (na + nb)))
    z = float(stats.norm.ppf(0.5 + level / 2))
    return g - z * se, g + z * se


def _summary(label: str, s: GroupStats, budgets: dict[str, int]) -> GroupSummary:
    n = len(s.values) or s.n
    best_of = _BEST_OF.search(label)
    budget = budgets.get(best_of.group(1)) if best_of else (1 if n <= 1 else None)
    return GroupSummary(label=label, n=n, mean=s.mean, sd=s.std if n >= 2 else None, budget_nodes=budget)


def claim_for(
    stage: StageResult,
    subject: str,
    reference: str,
    metric: str,
    direction: Direction,
    role: Role,
    test: str,
    alpha: float,
    budgets: dict[str, int],
    claim_id: str,
) -> Claim:
    a, b = stage.groups[subject][metric], stage.groups[reference][metric]
    statistic, df, p, log_p = compare(a, b, test)
    g = hedges_g(a, b) if p is not None else None
    sa, sb = _summary(subject, a, budgets), _summary(reference, b, budgets)
    matched = (
        None if sa.budget_nodes is None or sb.budget_nodes is None else sa.budget_nodes == sb.budget_nodes
    )
    diff = a.mean - b.mean
    return Claim(
        id=claim_id,
        stage=stage.stage,
        metric=metric,
        direction=direction,
        role=role,
        subject=sa,
        reference=sb,
        diff=diff,
        diff_ci=diff_interval(a, b) if p is not None else None,
        test=test if p is not None else None,
        statistic=statistic,
        df=df,
        p=p,
        log10_p=log_p,
        effect=g,
        effect_ci=g_interval(g, sa.n, sb.n) if g is not None else None,
        budgets_matched=matched,
        alpha=alpha,
        verdict=verdict(diff, p, direction, alpha),
    )


def claim_id(stage: str, subject_index: int, reference_index: int, metric: str) -> str:
    """Stable and TeX-safe: letters, digits and hyphens (`agenda-AvsB-test-accuracy`)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    slug = lambda s: re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()  # noqa: E731
    return f"{slug(stage)}-{letters[subject_index]}vs{letters[reference_index]}-{slug(metric)}"


def readable_names(idea: IdeaResults) -> dict[str, str]:
    """Each group's name from what it is: an ablation's name, "baseline" (a stage's first draft or
    a baseline), "tuned baseline" (its tuned best), else the idea's method; a stage added where two
    would share one."""
    out: dict[str, str] = {}
    for stage in idea.stages:
        for label in stage.groups:
            low = label.lower()
            if _is_ablation(label):
                name = _BEST_OF.sub("", label).split(":", 1)[-1].strip().replace("_", " ") + " ablation"
            elif low.startswith("tuned") or ("baseline" in low and "tuned" in low):
                name = "tuned baseline"
            elif "baseline" in low or low.startswith("draft"):
                name = "baseline"
            else:  # a method's title, up to what it is for ("X for Y under Z": X)
                name = re.split(r":| for | under | on | with ", idea.method or "method")[0].strip()
            out.setdefault(label, name)
    taken = list(out.values())
    return {
        label: name if taken.count(name) == 1 else f"{name} ({(_BEST_OF.search(label) or [0, label])[1]})"
        for label, name in out.items()
    }


def build_ledger(idea: IdeaResults, test: str = "welch", alpha: float = ALPHA) -> Ledger:
    primary = idea.primary.name
    directions = {m.name: m.direction for m in idea.metrics}
    budgets = {s.stage: s.search_nodes for s in idea.stages}
    ledger = Ledger(idea=idea.name, alpha=alpha, test=test)
    seen: dict[tuple[str, frozenset[tuple[float, ...]]], str] = {}
    for stage in idea.stages:
        labels = list(stage.groups)
        for ri, ref in enumerate(labels[1:], start=1):
            for metric in stage.groups[labels[0]]:
                if metric not in stage.groups[ref]:
                    continue
                claim = claim_for(
                    stage,
                    labels[0],
                    ref,
                    metric,
                    directions.get(metric, "maximize"),
                    metric_role(metric, primary),
                    test,
                    alpha,
                    budgets,
                    claim_id(stage.stage, 0, ri, metric),
                )
                runs = frozenset(tuple(sorted(stage.groups[g][metric].values)) for g in (labels[0], ref))
                # An ablation that equals an earlier group re-runs the same setting: the same comparison.
                first = seen.setdefault((metric, runs), claim.id)
                claim.same_runs_as = first if first != claim.id and len(runs) == 2 else None
                ledger.claims.append(claim)
    _choose_headline(ledger, idea)
    names = readable_names(idea)
    for c in ledger.claims:
        c.subject.name, c.reference.name = names[c.subject.label], names[c.reference.label]
    if idea.heldout and idea.heldout.get("heldout_value") is not None:
        ledger.heldout_metric = idea.heldout.get("metric")
    return ledger


def headline_metric(idea: IdeaResults, available: set[str]) -> tuple[str, Role]:
    """The held-out test counterpart of the selection metric when the run measured one."""
    primary = idea.primary.name
    tests = [m.name for m in idea.metrics if m.name in available and metric_role(m.name, primary) == "test"]
    twin = re.sub(r"(?i)(?<![a-z])(val|valid|validation)(?![a-z])", "test", primary)
    for name in sorted(tests, key=lambda n: (n != twin, tests.index(n))):
        return name, "test"
    return primary, "selection"


def _is_ablation(label: str) -> bool:
    return label.lower().startswith("ablation")


def _choose_headline(ledger: Ledger, idea: IdeaResults) -> None:
    """The method (a non-ablation, non-baseline stage best) against an earlier stage's best,
    a baseline one first, latest stage first; on the headline metric."""
    if not ledger.claims:
        return
    metric, role = headline_metric(idea, {c.metric for c in ledger.claims})
    on_metric = [c for c in ledger.claims if c.metric == metric]
    order = {s.stage: i for i, s in enumerate(idea.stages)}

    def rank(c: Claim) -> tuple[bool, bool, bool, bool, int]:
        subject, ref = c.subject.label.lower(), c.reference.label.lower()
        method_like = not _is_ablation(subject) and "baseline" not in subject
        earlier_best = _BEST_OF.search(c.reference.label) is not None and not _is_ablation(ref)
        fresh = c.same_runs_as is None
        return (fresh, method_like and earlier_best, "baseline" in ref, "tuned" in ref, order.get(c.stage, 0))

    best = max(on_metric, key=rank)
    best.headline = True
    ledger.headline_id = best.id
    ledger.headline_note = (
        f"held-out test metric {metric}"
        if role == "test"
        else f"selection metric {metric}: the run measured no held-out test metric"
    )
