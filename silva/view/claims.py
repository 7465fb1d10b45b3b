"""The view's claims panel: each idea's claim ledger, built by the writers' own code
(writeup/ledger.py, with the run's `writeup.test` and `writeup.alpha`), every figure as the
paper's macros print it (writeup/results.py), and each claim's sentence as the offline writer
states it (writeup/offline.py), read as plain text the way the reviewer reads a paper
(engine/claimtext.py). The page only shows these strings: it decides no verdict of its own.
See docs/view.md, "Claims".
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from engine.claims import Claim, GroupSummary, Ledger, Role, Verdict
from engine.claimtext import CLAIM_MARK_RE, plain
from engine.errors import ConfigError
from engine.journal import Journal
from silva.config import RunConfig
from writeup.config import WriteupConfig
from writeup.ledger import build_ledger
from writeup.offline import claim_sentence, headline_caveats
from writeup.results import ResultsMacros, build_macros, camel
from writeup.run_reader import read_run

TEST_NAMES = {"welch": "Welch's t-test", "student": "Student's t-test", "mannwhitney": "Mann-Whitney U test"}
ROLE_TEXT: dict[Role, str] = {
    "test": "held-out test metric",
    "selection": "selection metric: the search chose on it",
    "other": "other metric",
}
NO_STAGE = "no stage of this idea has ended yet: nothing to compare"
UNREADABLE = "claims not available: the run's results could not be read"
NO_GROUPS = "no ledger-able comparison yet: no ended stage of this idea aggregated two groups of replicates"


class GroupView(BaseModel):
    name: str = Field(
        description="what the group is: the method's name, baseline, tuned baseline, an ablation's name"
    )
    label: str = Field(description="the run's label of the group, naming its node and stage")
    n: int
    value: str = Field(description="mean ± sd as the paper prints it; a group of one run: its value alone")
    budget: str = Field("", description="search nodes of the stage it is the best of, when known")


class ClaimView(BaseModel):
    id: str
    stage: str
    metric: str
    role: Role
    role_text: str
    headline: bool
    subject: GroupView
    reference: GroupView
    diff: str
    test: str
    statistic: str
    p: str
    effect: str
    budgets: str
    verdict: Verdict
    sentence: str = Field(description="the offline writer's sentence about this claim, as plain text")
    repeats: str | None = Field(None, description="the earlier claim over the same runs")


class IdeaClaims(BaseModel):
    idea: str
    note: str = Field(description="which metric the headline uses and why, or why there is no claim")
    caveats: str = ""
    alpha: float | None = None
    claims: list[ClaimView] = Field(default_factory=list, description="the headline first")


class _Reader:
    """Macros as the reviewer reads them: LaTeX bodies expanded into plain text."""

    def __init__(self, macros: ResultsMacros) -> None:
        self.macros = macros
        self.bodies = {name: m.latex for name, m in macros.macros.items()}

    def text(self, tex: str) -> str:
        return " ".join(CLAIM_MARK_RE.sub("", plain(tex, self.bodies)).split())

    def value(self, name: str) -> str | None:
        return self.text(f"\\{name}{{}}") if name in self.macros.macros else None


def _group(r: _Reader, claim: Claim, g: GroupSummary) -> GroupView:
    base = r.macros.group_base[(claim.stage, g.label)] + camel(claim.metric)
    mean, sd = r.value(base + "Mean") or "-", r.value(base + "Sd")
    # One run has no spread: its value alone, never "± 0".
    value = f"{mean} ± {sd}" if g.sd is not None and sd is not None else f"{mean} (one run)"
    budget = f"{g.budget_nodes} search node{'s' if g.budget_nodes != 1 else ''}" if g.budget_nodes else ""
    return GroupView(name=r.macros.name(g.label), label=g.label, n=g.n, value=value, budget=budget)


def _claim(r: _Reader, claim: Claim) -> ClaimView:
    base = r.macros.claim_base[claim.id]
    ci = f" [{r.value(base + 'DiffLo')}, {r.value(base + 'DiffHi')}]" if claim.diff_ci else ""
    statistic = ""
    if claim.statistic is not None:
        statistic = ("U" if claim.test == "mannwhitney" else "t") + f" = {r.value(base + 'Stat')}"
        statistic += f", df = {r.value(base + 'Df')}" if claim.df is not None else ""
    effect = f"g = {r.value(base + 'G')}" if claim.effect is not None else "-"
    effect += f" [{r.value(base + 'GLo')}, {r.value(base + 'GHi')}]" if claim.effect_ci else ""
    budgets = {True: "matched", False: "not matched", None: "unknown"}[claim.budgets_matched]
    sentence = claim_sentence(claim, r.macros, "Main" if claim.headline else None)
    return ClaimView(
        id=claim.id,
        stage=claim.stage,
        metric=claim.metric,
        role=claim.role,
        role_text=ROLE_TEXT[claim.role],
        headline=claim.headline,
        subject=_group(r, claim, claim.subject),
        reference=_group(r, claim, claim.reference),
        diff=(r.value(base + "Diff") or "-") + ci,
        test=TEST_NAMES.get(claim.test, claim.test) if claim.test else "not tested",
        statistic=statistic or "-",
        p=r.value(base + "P") or "-",
        effect=effect,
        budgets=budgets,
        verdict=claim.verdict,
        sentence=r.text(sentence),
        repeats=claim.same_runs_as,
    )


def ledger_view(ledger: Ledger, macros: ResultsMacros) -> IdeaClaims:
    r = _Reader(macros)
    if not ledger.claims:
        return IdeaClaims(idea=ledger.idea, note=NO_GROUPS)
    main = ledger.headline
    order = sorted(ledger.claims, key=lambda c: not c.headline)
    return IdeaClaims(
        idea=ledger.idea,
        note=f"Headline on the {ledger.headline_note}. Every verdict: {TEST_NAMES[ledger.test]}, "
        f"two-sided, at alpha {ledger.alpha}.",
        caveats=r.text(headline_caveats(main, macros)) if main is not None else "",
        alpha=ledger.alpha,
        claims=[_claim(r, c) for c in order],
    )


def idea_claims(run_dir: Path, cfg: RunConfig, journal: Journal, ideas: list[str]) -> list[IdeaClaims]:
    """One entry per idea of the page, in its order; an idea with no ended stage says so."""
    try:
        run = read_run(run_dir, journal)
    except (ConfigError, ValueError, OSError, yaml.YAMLError) as e:
        # The idea file the run names may have been edited or removed since: the page still
        # draws the forest, and the panel says why it has no claims.
        return [IdeaClaims(idea=name, note=f"{UNREADABLE}: {e}") for name in ideas]
    writeup = cfg.writeup or WriteupConfig()
    out = []
    for name in ideas:
        idea = run.ideas.get(name)
        if idea is None:
            out.append(IdeaClaims(idea=name, note=NO_STAGE))
            continue
        ledger = build_ledger(idea, writeup.test, writeup.alpha)
        out.append(ledger_view(ledger, build_macros(run, idea, ledger)))
    return out
