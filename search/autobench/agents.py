"""Agents that play Auto-Bench: the ideal baseline, the random baseline and the LLM agent.

The ideal agent intervenes on every node in turn and reads the changes (re-intervening round
robin when plain re-draws may have hidden a descendant); the random agent guesses a random valid
graph and intervenes at random; the LLM agent asks a model, through Silva's LLM layer, for a
structured `CycleAnswer` from a rendering of the whole episode so far.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel, Field

from engine.llm import LLM, Message, StructuredOutputError
from search.autobench import graphs
from search.autobench.envs import Observation
from search.autobench.episode import CycleAnswer, EpisodeView
from search.autobench.graphs import Kind, Matrix

T = TypeVar("T", bound=BaseModel)


def integrate(observations: Sequence[Observation], n: int, kind: Kind) -> Matrix:
    """What a trajectory shows: each intervened node's changed nodes, unioned over its interventions.
    Chemistry: reachability rows (a transitively closed DAG). Social: neighbours, made symmetric."""
    adj = graphs.empty(n)
    for obs in observations:
        for j in obs.changed:
            if j != obs.node:
                adj[obs.node][j] = 1
    return graphs.symmetrize(adj) if kind == "undirected" else adj


class IdealAgent:
    """Intervene on the least-probed node (lowest index first); hypothesise what was seen."""

    name = "ideal"

    def step(self, view: EpisodeView) -> CycleAnswer:
        probes = [0] * view.n
        for obs in view.observations:
            probes[obs.node] += 1
        target = min(range(view.n), key=lambda i: (probes[i], i))
        return CycleAnswer(
            adjacency=integrate(view.observations, view.n, view.kind),  # type: ignore[arg-type]
            intervention=target,
            justification=f"node {target} probed {probes[target]} time(s)",
        )

    def integrate(
        self, env: str, n: int, kind: Kind, rules: str, trajectory: Sequence[Observation]
    ) -> Matrix:
        return integrate(trajectory, n, kind)


class RandomAgent:
    """A uniformly random valid graph (edge probability 1/2) and a uniformly random intervention."""

    name = "random"

    def __init__(self, seed: int | str) -> None:
        self._rng = random.Random(f"random-agent/{seed}")

    def step(self, view: EpisodeView) -> CycleAnswer:
        graph = (
            graphs.random_dag(view.n, 0.5, self._rng)
            if view.kind == "directed"
            else graphs.random_undirected(view.n, 0.5, self._rng)
        )
        return CycleAnswer(adjacency=graph, intervention=self._rng.randrange(view.n), justification="random")

    def integrate(
        self, env: str, n: int, kind: Kind, rules: str, trajectory: Sequence[Observation]
    ) -> Matrix:
        return (
            graphs.random_dag(n, 0.5, self._rng)
            if kind == "directed"
            else graphs.random_undirected(n, 0.5, self._rng)
        )


class Hypothesis(BaseModel):
    """The tracking task's structured output: only the integrated graph."""

    adjacency: list[list[int]] = Field(description="n x n 0/1 adjacency matrix")
    justification: str = ""


SYSTEM = (
    "You are a scientist discovering a hidden graph by experiment. Each cycle you state your current "
    "hypothesis as an adjacency matrix, choose the next intervention, and justify both. Be exact: "
    "answer only with the JSON object asked for."
)


def render_cycle(view: EpisodeView) -> str:
    """The episode as a prompt: a line per past cycle for people, and the same data as JSON."""
    lines = [
        view.rules,
        "",
        f"Cycle {view.cycle} of at most {view.max_cycles}. Initial state: {view.initial_state}.",
    ]
    for past in view.history:
        if past.invalid:
            lines.append(f"- cycle {past.cycle}: your matrix was invalid ({past.invalid})")
        obs = past.observation
        if obs is None:
            lines.append(f"- cycle {past.cycle}: the intervention was out of range; nothing happened")
        else:
            lines.append(
                f"- cycle {past.cycle}: intervened on {obs.node}; state {obs.before} -> {obs.after}; "
                f"changed: {obs.changed or 'none'}"
            )
    if view.history:
        lines.append("Your hypothesis so far was not right.")
    lines += [
        "",
        "Data (JSON):",
        json.dumps(_data(view.env, view.n, view.kind, view.observations, view.cycle, view.max_cycles)),
        "",
        'Answer with JSON: {"adjacency": [[0/1, ...], ...], "intervention": <node>, "justification": "..."}',
    ]
    return "\n".join(lines)


def render_tracking(env: str, n: int, kind: Kind, rules: str, trajectory: Sequence[Observation]) -> str:
    lines = [
        rules,
        "",
        f"Here is a full trajectory of {len(trajectory)} interventions. Integrate all of it into one "
        "hypothesis: for each node that was intervened on, what it affects. Nodes never intervened on: "
        "leave their row empty unless the rules imply it.",
    ]
    for t, obs in enumerate(trajectory, 1):
        lines.append(f"- step {t}: intervened on {obs.node}; changed: {obs.changed or 'none'}")
    lines += [
        "",
        "Data (JSON):",
        json.dumps(_data(env, n, kind, trajectory, None, None)),
        "",
        'Answer with JSON: {"adjacency": [[0/1, ...], ...], "justification": "..."}',
    ]
    return "\n".join(lines)


def _data(
    env: str,
    n: int,
    kind: str,
    observations: Sequence[Observation],
    cycle: int | None,
    max_cycles: int | None,
) -> dict[str, object]:
    return {
        "env": env,
        "n": n,
        "kind": kind,
        "cycle": cycle,
        "max_cycles": max_cycles,
        "observations": [{"node": o.node, "changed": o.changed} for o in observations],
    }


class LLMAgent:
    """Asks the model for a `CycleAnswer`. An answer that never validates is an invalid cycle
    (an empty, wrong-shaped matrix and no intervention), not a crash of the episode."""

    def __init__(
        self, llm: LLM, *, role: str = "code", name: str = "llm", node_id: str | None = None, attempt: int = 0
    ) -> None:
        self.llm, self.role, self.name, self.node_id, self.attempt = llm, role, name, node_id, attempt

    def _ask(self, prompt: str, output_type: type[T], stage: str) -> T | None:
        try:
            return self.llm.complete(
                [Message.system(SYSTEM), Message.user(prompt)],
                role=self.role,
                output_type=output_type,
                node_id=self.node_id,
                stage=stage,
                attempt=self.attempt,
                context={"autobench": stage},  # what the call is, for scripted responders only
            )
        except StructuredOutputError:
            return None

    def step(self, view: EpisodeView) -> CycleAnswer:
        answer = self._ask(render_cycle(view), CycleAnswer, "autobench")
        return answer or CycleAnswer(adjacency=[], intervention=-1, justification="(no valid answer)")

    def integrate(
        self, env: str, n: int, kind: Kind, rules: str, trajectory: Sequence[Observation]
    ) -> Matrix:
        answer = self._ask(render_tracking(env, n, kind, rules, trajectory), Hypothesis, "tracking")
        return answer.adjacency if answer is not None else []
