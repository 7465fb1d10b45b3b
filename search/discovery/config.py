"""The `discovery:` section of a run config (data-driven discovery mode, docs/discovery.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from engine.config import Strict
from search.stateful.config import StatefulConfig

Mode = Literal["discoper", "experigen", "stateful"]
GateKind = Literal["two_split", "bonferroni", "bh"]


class DiscoveryConfig(Strict):
    data: Path = Field(description="CSV or Parquet table (relative to the config file)")
    prior: Path | None = Field(
        None,
        description="optional prior information: a text file (a focus question or known facts) "
        "or YAML with `question:` and/or `facts: [...]`",
    )
    mode: Mode = Field(
        "discoper",
        description="discoper (Propose-Evaluate-Reflect) | experigen (generator/experimenter) "
        "| stateful (investigation state and frontier, docs/autobench.md)",
    )
    gate: GateKind | None = Field(
        None,
        description="two_split | bonferroni | bh; default: two_split for discoper, bonferroni for experigen",
    )
    image_column: str | None = Field(None, description="column of image paths relative to the data file")
    group_column: str | None = Field(
        None,
        description="rows sharing this column's value (a subject, a site) stay in one part of the "
        "split and held-out tests one row of each; exact duplicate rows always stay together. "
        "Default: a column that identifies units with several rows each, found with a warning",
    )
    heldout_fraction: float = Field(
        0.3, gt=0, lt=0.9, description="rows kept out of every prompt and search test"
    )
    split_seed: int | None = Field(
        None, description="seed of the one train/held-out split (default: the run seed)"
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of every gate")
    min_effect: float = Field(0.2, ge=0, description="smallest |standardized effect| a gate accepts")
    replication_ratio: float = Field(
        0.6, ge=0, le=1, description="two-split: |effect held-out| >= ratio x |effect train|"
    )
    max_hypotheses: int = Field(30, ge=1, description="discoper: hypotheses proposed in all")
    reflect_every: int = Field(5, ge=1, description="discoper: Reflect after every K evaluated hypotheses")
    max_chains: int = Field(6, ge=1, description="experigen: seed hypotheses (outer acquisitions)")
    chain_steps: int = Field(4, ge=1, description="experigen: tests in one chain (seed + refinements), T")
    seed_candidates: int = Field(4, ge=1, description="experigen: candidates the generator scores per seed")
    novelty_weight: float = Field(
        1.0, ge=0, description="experigen: seed score = plausibility + weight x novelty"
    )
    bank_capacity: int = Field(8, ge=1, description="experigen: K, the bank keeps the K most diverse claims")
    confirm_heldout: bool = Field(
        True,
        description="bonferroni/bh gates: confirm each accepted claim once on held-out "
        "(supported / weakened / refuted); the two-split gate always uses it",
    )
    adjust_covariates: int = Field(
        3,
        ge=0,
        description="Silva adjusts each decided claim on a pair of columns for at most this many measured "
        "covariates associated with both (held-out; no LLM call); 0: never",
    )
    negative_controls: int = Field(
        20,
        ge=0,
        description="Silva re-runs each decided claim's code on this many held-out tables with its outcome "
        "permuted (no LLM call) and flags it spurious when they pass too often; 0: never",
    )
    interactions: int = Field(
        3,
        ge=0,
        description="Silva tests the interaction of two standing main effects on one outcome itself (no LLM "
        "call), gated and checked like any claim, at most this many per run; 0: never (never under bh)",
    )
    stateful: StatefulConfig = Field(
        default_factory=StatefulConfig, description="stateful mode: steps and ablations"
    )
    history: int = Field(20, ge=0, description="earlier hypotheses (train evidence only) shown in a prompt")

    @model_validator(mode="after")
    def _gate_default(self) -> DiscoveryConfig:
        if self.gate is None:
            self.gate = "two_split" if self.mode == "discoper" else "bonferroni"
        return self

    @property
    def chosen_gate(self) -> GateKind:
        assert self.gate is not None
        return self.gate
