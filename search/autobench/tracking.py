"""The long-trajectory tracking task: no choices to make, only integration.

The agent is handed a full trajectory of seeded random interventions with what each changed,
and answers one hypothesis. It is scored on the rows the trajectory determines (the nodes
intervened on: their descendants, or their friends) against the hidden graph, so results can be
read against n and trajectory length with the ideal integration as the ceiling.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from search.autobench import graphs
from search.autobench.envs import EnvSpec, Observation, Oracle
from search.autobench.episode import hypothesis_scores
from search.autobench.graphs import Kind, Matrix


class TrackingAgent(Protocol):
    name: str

    def integrate(
        self, env: str, n: int, kind: Kind, rules: str, trajectory: Sequence[Observation]
    ) -> Matrix: ...


class TrackingResult(BaseModel):
    spec: EnvSpec
    length: int = Field(ge=1)
    agent: str
    invalid: str
    metrics: dict[str, float]
    trajectory: list[Observation]
    answer: Matrix


def trajectory(spec: EnvSpec, length: int) -> tuple[Oracle, list[Observation]]:
    oracle = Oracle(spec)
    rng = random.Random(f"autobench-tracking/{spec.env}/{spec.n}/{spec.seed}/{length}")
    return oracle, [oracle.intervene(rng.randrange(spec.n)) for _ in range(length)]


def run_tracking(spec: EnvSpec, length: int, agent: TrackingAgent) -> TrackingResult:
    oracle, steps = trajectory(spec, length)
    answer = agent.integrate(spec.env, spec.n, spec.kind, oracle.rules(), steps)
    invalid = graphs.invalid_reason(answer, spec.n, spec.kind)
    usable = graphs.empty(spec.n) if invalid else answer
    # What the answer says each intervened node affects, against what it truly affects.
    said = graphs.reachability(usable) if spec.kind == "directed" else usable
    truth = oracle.truth_reach if spec.kind == "directed" else oracle.truth
    rows = sorted({o.node for o in steps})
    right = [said[i][j] == truth[i][j] for i in rows for j in range(spec.n) if j != i]
    metrics = {
        "integration_exact": float(all(right)),
        "integration_accuracy": sum(right) / len(right) if right else 1.0,
        "nodes_probed": float(len(rows)),
        "invalid_rate": float(bool(invalid)),
        **hypothesis_scores(oracle.truth, usable, spec.kind),
    }
    return TrackingResult(
        spec=spec,
        length=length,
        agent=agent.name,
        invalid=invalid,
        metrics=metrics,
        trajectory=steps,
        answer=answer,
    )
