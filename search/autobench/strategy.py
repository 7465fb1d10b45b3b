"""Auto-Bench on Silva's engine: every episode (or tracking task) is one node, run as a Job by
whatever Executor the run uses, so episodes run in parallel on the workers, are journaled,
resume after a kill (a node with a result is never re-played) and stop on the run's budgets.

Node layout: stage `autobench`, kind `episode` or `tracking`, idea = the environment,
params = the `Task` (with its `key`), origin label = the agent. The attempt writes the full
trace to `nodes/<id>/attempt-N/episode.json` and reports its scores as node metrics and an
`AutoBenchOutcome`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.attempt import attempt_dir
from engine.dispatch import Finish
from engine.journal import Journal
from engine.llm import LLM, BudgetExceeded
from engine.node import AttemptResult, BudgetRefusal, MetricValue, Node, Origin
from engine.outcome import NodeOutcome
from search.autobench.agents import IdealAgent, LLMAgent, RandomAgent
from search.autobench.config import LLM_AGENTS, METRICS, AutoBenchConfig, Task
from search.autobench.episode import EpisodeResult, run_episode
from search.autobench.tracking import TrackingResult, run_tracking

STAGE = "autobench"
TRACE_FILE = "episode.json"
DIRECTIONS = {m.name: m.direction for m in METRICS}


class AutoBenchOutcome(NodeOutcome):
    """What an episode node reports besides its metrics: the task it played and its trace file."""

    family: Literal["autobench"] = "autobench"
    key: str
    agent: str
    success: bool
    trace: str


@dataclass
class EpisodeJob:
    node_id: str
    attempt: int
    task: Task
    run_dir: Path
    llm: LLM | None = None
    role: str = "code"

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        agent = self._agent()
        result: EpisodeResult | TrackingResult
        try:
            if self.task.task == "episode":
                result = run_episode(self.task.spec, agent)
                success, metrics = result.success, result.metrics
            else:
                assert self.task.length is not None
                result = run_tracking(self.task.spec, self.task.length, agent)
                success, metrics = result.metrics["integration_exact"] == 1.0, result.metrics
        except BudgetExceeded as e:  # no result: the node re-runs after a resume with more budget
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        out = attempt_dir(self.run_dir, self.node_id, self.attempt)
        out.mkdir(parents=True, exist_ok=True)
        (out / TRACE_FILE).write_text(result.model_dump_json())
        trace = str((out / TRACE_FILE).relative_to(self.run_dir))
        return AttemptResult(
            status="good",
            metrics=[MetricValue(name=k, value=v, direction=DIRECTIONS.get(k)) for k, v in metrics.items()],
            artifacts=[trace],
            outcome=AutoBenchOutcome(key=self.task.key, agent=self.task.agent, success=success, trace=trace),
        )

    def _agent(self) -> IdealAgent | RandomAgent | LLMAgent:
        name = self.task.agent
        if name == "ideal":
            return IdealAgent()
        if name == "random":
            return RandomAgent(seed=self.task.key)
        if self.llm is None:
            raise RuntimeError(f"agent {name!r} needs an LLM client")
        return LLMAgent(self.llm, role=self.role, name=name, node_id=self.node_id, attempt=self.attempt)


class AutoBenchStrategy:
    """Proposes each task of the config once, in order; finished when every task has a node."""

    def __init__(
        self, cfg: AutoBenchConfig, journal: Journal, run_dir: Path, clients: Mapping[str, LLM] | None = None
    ) -> None:
        self.cfg, self.journal, self.run_dir = cfg, journal, run_dir
        self.clients = dict(clients or {})
        missing = sorted({a for a in cfg.agents if a in LLM_AGENTS} - set(self.clients))
        if missing:
            raise ValueError(f"agents {missing} need LLM clients")
        self.tasks = cfg.tasks()
        self.created = {str(n.params.get("key")) for n in journal}  # resume: never a second node per task

    def propose(self, slots: int) -> list[Node]:
        out: list[Node] = []
        for task in self.tasks:
            if len(out) >= slots:
                break
            if task.key in self.created:
                continue
            self.created.add(task.key)
            out.append(
                Node(
                    stage=STAGE,
                    kind=task.task,
                    idea=task.spec.env,
                    seed=task.spec.seed,
                    params=task.model_dump(mode="json"),
                    origin=Origin(label=task.agent),
                )
            )
        return out

    def job_for(self, node: Node, attempt: int) -> EpisodeJob:
        task = Task.model_validate({k: v for k, v in node.params.items() if k != "key"})
        return EpisodeJob(
            node_id=node.id,
            attempt=attempt,
            task=task,
            run_dir=self.run_dir,
            llm=self.clients.get(task.agent),
            role=self.cfg.role if task.agent == "llm" else "code",
        )

    def finished(self) -> Finish | None:
        if len(self.created) < len(self.tasks):
            return None
        return Finish("complete", f"all {len(self.tasks)} Auto-Bench tasks played")
