"""One Auto-Bench episode: cycles of (hypothesis, intervention, justification) against an oracle.

Each cycle the agent sees the rules, the initial state, every observation so far and what was
wrong with its earlier hypotheses, and answers with its current adjacency hypothesis, the next
intervention and why. A right hypothesis ends the episode (its intervention is not run); so
does the 2n-th cycle. An invalid matrix (wrong shape, entries other than 0/1, a self-loop, a
directed cycle, an asymmetric social graph) is counted and never right.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from search.autobench import graphs
from search.autobench.envs import EnvSpec, Observation, Oracle
from search.autobench.graphs import Matrix


class CycleAnswer(BaseModel):
    """What an agent says each cycle (the LLM agent's structured output)."""

    adjacency: list[list[int]] = Field(description="current hypothesis: n x n 0/1 adjacency matrix")
    intervention: int = Field(description="the node to intervene on next")
    justification: str = Field("", description="why this hypothesis and this intervention")


class PastCycle(BaseModel):
    cycle: int
    invalid: str = ""  # what was wrong with the matrix; '' when valid (and then simply not right)
    observation: Observation | None = None  # None when the intervention was out of range


class EpisodeView(BaseModel):
    """All an agent is shown: rules, state, history. Nothing of the hidden graph."""

    env: str
    n: int
    kind: str
    rules: str
    cycle: int
    max_cycles: int
    initial_state: list[int]
    history: list[PastCycle]

    @property
    def observations(self) -> list[Observation]:
        return [c.observation for c in self.history if c.observation is not None]


class Agent(Protocol):
    name: str

    def step(self, view: EpisodeView) -> CycleAnswer: ...


class CycleRecord(BaseModel):
    cycle: int
    answer: CycleAnswer
    invalid: str = ""
    right: bool = False
    observation: Observation | None = None


class EpisodeResult(BaseModel):
    spec: EnvSpec
    agent: str
    success: bool
    cycles: int
    interventions: int
    invalid_matrices: int
    metrics: dict[str, float]
    truth: Matrix
    trace: list[CycleRecord]


def run_episode(spec: EnvSpec, agent: Agent) -> EpisodeResult:
    oracle = Oracle(spec)
    initial = list(oracle.state)
    history: list[PastCycle] = []
    trace: list[CycleRecord] = []
    for cycle in range(1, spec.max_cycles + 1):
        view = EpisodeView(
            env=spec.env,
            n=spec.n,
            kind=spec.kind,
            rules=oracle.rules(),
            cycle=cycle,
            max_cycles=spec.max_cycles,
            initial_state=initial,
            history=history,
        )
        answer = agent.step(view)
        invalid = graphs.invalid_reason(answer.adjacency, spec.n, spec.kind)
        record = CycleRecord(
            cycle=cycle,
            answer=answer,
            invalid=invalid,
            right=not invalid and oracle.is_right(answer.adjacency),
        )
        trace.append(record)
        if record.right:
            break
        if 0 <= answer.intervention < spec.n:
            record.observation = oracle.intervene(answer.intervention)
        history.append(PastCycle(cycle=cycle, invalid=invalid, observation=record.observation))
    return _result(spec, agent.name, oracle, trace)


def _result(spec: EnvSpec, agent: str, oracle: Oracle, trace: list[CycleRecord]) -> EpisodeResult:
    success = bool(trace) and trace[-1].right
    invalid = sum(bool(c.invalid) for c in trace)
    interventions = sum(c.observation is not None for c in trace)
    # Scored on the last valid hypothesis: an agent that ends on a malformed matrix keeps its last usable one.
    final = next((c.answer.adjacency for c in reversed(trace) if not c.invalid), graphs.empty(spec.n))
    metrics = {
        "success": float(success),
        "cycles": float(len(trace)),
        "interventions": float(interventions),
        "invalid_rate": invalid / len(trace) if trace else 0.0,
        **hypothesis_scores(oracle.truth, final, spec.kind),
    }
    if success:
        metrics["cycles_to_success"] = float(len(trace))
    return EpisodeResult(
        spec=spec,
        agent=agent,
        success=success,
        cycles=len(trace),
        interventions=interventions,
        invalid_matrices=invalid,
        metrics=metrics,
        truth=oracle.truth,
        trace=trace,
    )


def hypothesis_scores(truth: Matrix, guess: Matrix, kind: graphs.Kind) -> dict[str, float]:
    """Reachability equality and similarity; for the social network also exact adjacency and edge
    F1 (a DAG's adjacency is not identifiable from interventions, only its reachability)."""
    reach_t, reach_g = graphs.reachability(truth), graphs.reachability(guess)
    scores = {
        "reachability_equal": float(graphs.off_diagonal(reach_t) == graphs.off_diagonal(reach_g)),
        "reachability_similarity": graphs.similarity(reach_t, reach_g),
    }
    if kind == "undirected":
        scores["exact_adjacency"] = float(graphs.off_diagonal(truth) == graphs.off_diagonal(guess))
        scores["edge_f1"] = graphs.edge_scores(truth, guess, kind)[2]
    return scores
