"""The claim ledger's contract: the typed claims a paper may state and the one rule that decides
their verdicts. Writers build it (writeup/ledger.py), the reviewer checks papers against it, the
view shows it: all of them read these models and call `verdict`, never a rule of their own.
See docs/writeup.md, "The claim ledger".
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from engine.node import Direction

LEDGER_FILE = "ledger.json"
LITERATURE_FILE = "literature.json"
ALPHA = 0.05
Verdict = Literal["better", "worse", "no detectable difference", "untested"]
Role = Literal["selection", "test", "other"]


class GroupSummary(BaseModel):
    label: str
    name: str = Field(
        "",
        description="what the group is: the method's name, baseline, tuned baseline, an ablation's name",
    )
    n: int
    mean: float
    sd: float | None = Field(description="None for a group of one run: one value has no spread")
    budget_nodes: int | None = Field(
        None, description="search nodes of the stage this group is the best of; 1 for a single run"
    )


class Claim(BaseModel):
    id: str
    stage: str
    metric: str
    direction: Direction
    role: Role
    subject: GroupSummary
    reference: GroupSummary
    diff: float = Field(description="subject mean minus reference mean")
    diff_ci: tuple[float, float] | None = None
    test: str | None = Field(None, description="welch | student | mannwhitney; None when untested")
    statistic: float | None = None
    df: float | None = None
    p: float | None = None
    log10_p: float | None = None
    effect: float | None = Field(None, description="Hedges' g, subject minus reference")
    effect_ci: tuple[float, float] | None = None
    budgets_matched: bool | None = None
    alpha: float = ALPHA
    verdict: Verdict
    headline: bool = False
    same_runs_as: str | None = Field(
        None, description="an earlier claim over the same two sets of runs (a repeat, not a new finding)"
    )

    @property
    def significant(self) -> bool:
        return self.verdict in ("better", "worse")


class Ledger(BaseModel):
    idea: str
    alpha: float = ALPHA
    test: str = "welch"
    headline_id: str | None = None
    headline_note: str = Field("", description="which metric the headline uses and why")
    claims: list[Claim] = Field(default_factory=list)
    heldout_metric: str | None = Field(
        None, description="the metric the held-out choice measured on data the search never saw, if any"
    )

    @property
    def headline(self) -> Claim | None:
        return self.get(self.headline_id) if self.headline_id else None

    def get(self, claim_id: str) -> Claim | None:
        return next((c for c in self.claims if c.id == claim_id), None)

    def write(self, paper_dir: Path) -> Path:
        path = paper_dir / LEDGER_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.model_dump_json(indent=2))
        tmp.replace(path)
        return path


class LiteratureRecord(BaseModel):
    """What the writer's literature search returned and the paper may cite: cite key -> the
    source's paper id. Written beside the paper as literature.json; the reviewer holds every .bib
    entry of a Silva paper to it."""

    entries: dict[str, str] = Field(default_factory=dict)

    def write(self, paper_dir: Path) -> Path:
        path = paper_dir / LITERATURE_FILE
        path.write_text(self.model_dump_json(indent=2))
        return path


def load_literature(paper_dir: Path) -> LiteratureRecord:
    """The record beside the paper; an empty one when no literature search ran."""
    path = paper_dir / LITERATURE_FILE
    return LiteratureRecord.model_validate_json(path.read_text()) if path.is_file() else LiteratureRecord()


def load_ledger(paper_dir: Path) -> Ledger | None:
    path = paper_dir / LEDGER_FILE
    return Ledger.model_validate_json(path.read_text()) if path.is_file() else None


def verdict(diff: float, p: float | None, direction: Direction, alpha: float = ALPHA) -> Verdict:
    """The one rule: untested without a p-value; a difference counts only when p < alpha, and
    then its sign, oriented by the metric's direction, says better or worse."""
    if p is None or not math.isfinite(p):
        return "untested"
    if p >= alpha:
        return "no detectable difference"
    return "better" if (diff > 0) == (direction == "maximize") else "worse"
