"""Silva's interaction follow-up: once two main effects on one outcome stand, test their interaction.

A scientist who has established that `a` and `b` each move `y` asks next whether the effect of one
depends on the other. Silva asks it itself, with no LLM call: a node of kind `interaction` whose
hypothesis is the a:b term of `y ~ a * b` (`silva_stats.interaction`), gated on train, tested once
on held-out and given negative controls like any claim. Only a numeric outcome with more than a few
levels and numeric causes qualify (integer codes are tested with the contingency tools), at most
`interactions` per run, and none under the BH gate, which decides every claim only at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from search.discovery.checks import claim_pair
from search.discovery.data import CODE_LEVELS
from search.discovery.evidence import GOOD, Hypothesis

if TYPE_CHECKING:
    from engine.node import Node
    from search.discovery.job import DiscoveryJob
    from search.discovery.state import Record
    from search.discovery.strategy import DiscoveryStrategy

KIND = "interaction"
TEST = "ols_interaction"
Triple = tuple[str, str, str]  # (a, b, outcome)


def statement(a: str, b: str, y: str) -> str:
    return f"Interaction `{a}` x `{b}` on `{y}`: the effect of `{a}` on `{y}` depends on `{b}`"


def hypothesis(triple: Triple, main_effects: list[str]) -> Hypothesis:
    a, b, y = triple
    code = (
        "import silva_stats as st\ndf = st.load()\n"
        f"res = st.interaction(df, {y!r}, {a!r}, {b!r})\nst.record(res, expected_sign=0)\n"
    )
    return Hypothesis(
        statement=statement(a, b, y),
        h0=f"The effect of `{a}` on `{y}` is the same at every level of `{b}`",
        h1=f"The effect of `{a}` on `{y}` changes with `{b}` (a non-zero a:b term)",
        variables=[a, b, y],
        rationale=f"Silva's follow-up of the established main effects {' and '.join(main_effects)}",
        refines=main_effects[0],
        code=code,
    )


def kinds(train: pd.DataFrame) -> tuple[set[str], set[str]]:
    """(numeric columns, quantities: numeric columns with more than a few levels, fit for an outcome)."""
    numeric = {c for c in train.columns if pd.api.types.is_numeric_dtype(train[c])}
    return numeric, {c for c in numeric if train[c].nunique() > CODE_LEVELS}


def follow_ups(
    established: dict[frozenset[str], str],
    numeric: set[str],
    quantities: set[str],
    asked: set[frozenset[str]],
) -> list[tuple[Triple, list[str]]]:
    """Every interaction not yet asked whose two main effects on one outcome stand (`established`:
    pair of columns -> the id of its standing claim), with the ids of those claims, in a fixed order."""
    out = []
    for p, q in itertools.combinations(sorted(established, key=sorted), 2):
        shared = p & q
        if len(shared) != 1:
            continue
        (y,) = shared
        a, b = sorted((p | q) - shared)
        if frozenset((a, b, y)) not in asked and y in quantities and {a, b} <= numeric:
            out.append(((a, b, y), [established[p], established[q]]))
    return out


def _established(records: Iterable[Record], columns: list[str]) -> dict[frozenset[str], str]:
    """Each pair of columns with a standing marginal claim (accepted or supported) -> its first
    claim's id. An adjusted claim is no main effect: adjusting for a common outcome (a collider)
    makes two independent causes look related."""
    out: dict[frozenset[str], str] = {}
    for r in records:
        if r.status not in GOOD or r.hypothesis is None or r.evidence is None:
            continue
        pair = claim_pair(r.hypothesis, r.evidence, columns)
        if pair is not None and not pair[2]:
            out.setdefault(frozenset(pair[:2]), r.id)
    return out


def _asked(records: Iterable[Record], params: Iterable[object]) -> set[frozenset[str]]:
    """The interactions already asked: Silva's own (their node params) and any the analyst tested
    (a:b on y and b:a on y are one model)."""
    out = {frozenset(p) for p in params if isinstance(p, list)}
    for r in records:
        if r.evidence is not None and r.evidence.test == TEST and r.hypothesis is not None:
            out.add(frozenset(r.hypothesis.variables[:3]))
    return out


class InteractionFollowUps:
    """The strategy's side of the follow-up: which are due, their nodes, their jobs, their gate."""

    def __init__(self, s: DiscoveryStrategy) -> None:
        self.s = s
        self.numeric, self.quantities = kinds(s.train)

    def pending(self) -> list[tuple[Triple, list[str]]]:
        d, made = self.s.dcfg, [n for n in self.s.journal.nodes.values() if n.kind == KIND]
        if d.chosen_gate == "bh" or len(made) >= d.interactions or self.s.state.finished is not None:
            return []
        skip = {*self.s.identifiers, *(c for c in (self.s.split.group_column, d.image_column) if c)}
        records = self.s.state.proposals()
        established = _established(records, [c for c in self.s.train.columns if c not in skip])
        asked = _asked(records, [n.params.get("interaction") for n in made])
        return follow_ups(established, self.numeric, self.quantities, asked)[: d.interactions - len(made)]

    def nodes(self, slots: int) -> list[Node]:
        return [
            self.s.node(
                KIND, plan=f"Silva's follow-up: {statement(*t)}", interaction=list(t), main_effects=ids
            )
            for t, ids in self.pending()[: max(slots, 0)]
        ]

    def prepare(self, job: DiscoveryJob, node: Node) -> None:
        a, b, y = node.params["interaction"]
        job.hypothesis = hypothesis((a, b, y), list(node.params["main_effects"]))

    def evaluated(self, rec: Record) -> None:
        """One test of the family of at most `interactions` follow-ups (Bonferroni's T)."""
        if rec.status != "duplicate":
            self.s.train_gate(rec, bonferroni_tests=max(1, self.s.dcfg.interactions))
