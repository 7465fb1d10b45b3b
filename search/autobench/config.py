"""The `autobench` config: which oracles, sizes, seeds and agents one bench run plays, and the
engine sections (budgets, executor, resources) its episodes run under."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field, model_validator

from engine.config import Budgets, ExecutorConfig, Resources, Strict, default_resources
from engine.llm.config import LLMConfig
from search.autobench.envs import EnvName, EnvSpec

AgentName = Literal["ideal", "random", "scripted", "llm"]
LLM_AGENTS: tuple[AgentName, ...] = ("scripted", "llm")


class Task(BaseModel):
    """One node of a bench run: an episode, or a tracking task of `length` interventions."""

    task: Literal["episode", "tracking"] = "episode"
    spec: EnvSpec
    agent: AgentName
    length: int | None = Field(None, ge=1)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def key(self) -> str:
        s = self.spec
        tail = f"/T{self.length}" if self.task == "tracking" else ""
        return f"{self.task}/{s.env}/n{s.n}/s{s.seed}{tail}/{self.agent}"


class AutoBenchConfig(Strict):
    name: str = Field("autobench", min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    output_dir: Path = Path("runs")
    envs: list[EnvName] = Field(default_factory=lambda: list[EnvName](["chemistry"]), min_length=1)
    ns: list[int] = Field(default_factory=lambda: [3, 5, 7, 10, 15], min_length=1)
    graphs: int = Field(5, ge=1, description="seeded graphs per (env, n)")
    seed: int = Field(0, description="first graph seed; graph k uses seed + k")
    agents: list[AgentName] = Field(
        default_factory=lambda: list[AgentName](["ideal", "random", "scripted"]), min_length=1
    )
    colours: int = Field(4, ge=2, description="chemistry: K colours")
    edge_prob: float = Field(0.3, gt=0, lt=1)
    forced_change: bool = Field(True, description="chemistry: re-drawn colours always change")
    success: Literal["reachability", "adjacency"] | None = Field(None, description="default per env")
    tracking_lengths: list[int] = Field(default_factory=list, description="long-trajectory task lengths")
    role: str = Field("code", description="LLM role the llm agent calls")
    memory: int = Field(8, ge=1, description="scripted agent: observations it integrates")
    slip: float = Field(0.05, ge=0, le=1, description="scripted agent: chance of one wrong matrix entry")
    llm: LLMConfig | None = Field(None, description="providers/models/roles for the llm agent")
    budgets: Budgets = Field(default_factory=lambda: Budgets(wall_clock_s=3600.0))
    executor: ExecutorConfig = Field(
        default_factory=lambda: ExecutorConfig(kind="inprocess", max_in_flight=4)
    )
    resources: dict[str, Resources] = Field(default_factory=default_resources)

    @model_validator(mode="after")
    def _llm_for_llm_agent(self) -> AutoBenchConfig:
        if "llm" in self.agents and self.llm is None:
            raise ValueError(
                "agent 'llm' needs an `llm:` section (providers, models, roles) in the bench config"
            )
        return self

    def resources_for(self, kind: str) -> Resources:
        return self.resources.get(kind, self.resources.get("default", Resources()))

    def spec(self, env: EnvName, n: int, k: int) -> EnvSpec:
        return EnvSpec(
            env=env,
            n=n,
            seed=self.seed + k,
            colours=self.colours,
            edge_prob=self.edge_prob,
            forced_change=self.forced_change,
            success=self.success,
        )

    def tasks(self) -> list[Task]:
        """Every node of the run, in a fixed order (the resume key is `Task.key`)."""
        out: list[Task] = []
        for env in self.envs:
            for n in self.ns:
                for k in range(self.graphs):
                    spec = self.spec(env, n, k)
                    out += [Task(spec=spec, agent=a) for a in self.agents]
                    out += [
                        Task(task="tracking", spec=spec, agent=a, length=t)
                        for t in self.tracking_lengths
                        for a in self.agents
                    ]
        return out


class MetricDecl(BaseModel):
    name: str
    direction: Literal["maximize", "minimize"]
    primary: bool = False


METRICS = [
    MetricDecl(name="success", direction="maximize", primary=True),
    MetricDecl(name="reachability_similarity", direction="maximize"),
    MetricDecl(name="reachability_equal", direction="maximize"),
    MetricDecl(name="cycles", direction="minimize"),
    MetricDecl(name="cycles_to_success", direction="minimize"),
    MetricDecl(name="interventions", direction="minimize"),
    MetricDecl(name="invalid_rate", direction="minimize"),
    MetricDecl(name="exact_adjacency", direction="maximize"),
    MetricDecl(name="edge_f1", direction="maximize"),
    MetricDecl(name="integration_exact", direction="maximize"),
    MetricDecl(name="integration_accuracy", direction="maximize"),
    MetricDecl(name="nodes_probed", direction="maximize"),
]
