"""Run configuration: one YAML file, validated by pydantic, with errors a person can act on."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.errors import ConfigError
from engine.llm.config import LLMConfig

STAGES: tuple[str, ...] = ("preliminary", "hyperparameter", "agenda", "ablation")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageConfig(_Strict):
    max_nodes: int = Field(4, ge=1, description="search nodes in this stage (replicates excluded)")


def _default_stages() -> dict[str, StageConfig]:
    return {
        "preliminary": StageConfig(max_nodes=2),
        "hyperparameter": StageConfig(max_nodes=8),
        "agenda": StageConfig(max_nodes=4),
        "ablation": StageConfig(max_nodes=4),
    }


class Budgets(_Strict):
    wall_clock_s: float | None = Field(3600.0, gt=0, description="whole run, summed over resumes")
    node_timeout_s: float = Field(300.0, gt=0, description="deadline of one experiment attempt")
    max_nodes: int | None = Field(None, ge=1, description="all nodes of the run, every kind")
    dollars: float | None = Field(None, ge=0, description="LLM spend for the run")


class Resources(_Strict):
    num_cpus: float = Field(1.0, ge=0)
    num_gpus: float = Field(0.0, ge=0)
    memory_mb: int = Field(2048, ge=64, description="sandbox memory limit of the attempt")


def _default_resources() -> dict[str, Resources]:
    return {"default": Resources(), "aggregation": Resources(num_cpus=0.5, memory_mb=1024)}


class ExecutorConfig(_Strict):
    kind: Literal["ray", "inprocess"] = "ray"
    address: str | None = Field(None, description="Ray address; None starts a local cluster")
    max_in_flight: int = Field(4, ge=1, description="attempts running at once")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a local Ray cluster")


class SandboxConfig(_Strict):
    provider: Literal["local", "docker", "none"] = "local"
    options: dict[str, Any] = Field(default_factory=dict, description="provider options, e.g. image")


class SearchConfig(_Strict):
    """The LLM tree search (idea mode): policy and its knobs, judgements, held-out selection."""

    policy: Literal["best_first", "greedy", "mcts", "evolutionary"] = "best_first"
    num_drafts: int = Field(3, ge=1, description="stage 1: independent drafts before refining")
    debug_prob: float = Field(0.5, ge=0, le=1, description="chance a free slot debugs a buggy leaf")
    max_debug_depth: int = Field(3, ge=0, description="consecutive debug steps on one line of nodes")
    mcts_exploration: float = Field(1.0, ge=0, description="UCT exploration constant c")
    mcts_widening: float = Field(0.5, gt=0, le=1, description="progressive widening: children <= ceil(2 N^a)")
    islands: int = Field(2, ge=1, description="evolutionary: sub-populations")
    crossover_rate: float = Field(0.3, ge=0, le=1, description="evolutionary: chance of a two-parent child")
    migration_prob: float = Field(0.2, ge=0, le=1, description="evolutionary: second parent from another island")
    tournament: int = Field(2, ge=1, description="evolutionary: tournament size")
    min_tuning_nodes: int = Field(2, ge=1, description="stage 2 ends on convergence only after this many")
    tie_tolerance: float = Field(0.0, ge=0, description="primary-metric gap within which the LLM breaks ties")
    plots_gate: bool = Field(True, description="plots that fail to render or fail critique make a node buggy")
    max_plots: int = Field(4, ge=0, description="plots shown to the vision critique")
    heldout: bool = Field(False, description="choose the final best node on a held-out split")
    heldout_candidates: int = Field(3, ge=1, description="top nodes re-run on the held-out split")


class IdeaSource(_Strict):
    """One idea of a forest, with its own budgets inside the run's."""

    path: Path
    max_nodes: int | None = Field(None, ge=1, description="nodes of this idea's tree, every kind")
    dollars: float | None = Field(None, ge=0, description="LLM spend of this idea")


class RunConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    template: Path | None = Field(None, description="template directory (offline search)")
    idea: Path | None = Field(None, description="idea file (LLM search)")
    ideas: list[IdeaSource] = Field(default_factory=list, description="several idea files: a forest")
    search: SearchConfig = Field(default_factory=SearchConfig)
    llm: LLMConfig | None = Field(None, description="LLM providers, models and roles (idea mode)")
    scripted_fn: str | None = Field(
        None, description="`file.py:function` answering the scripted providers' calls (offline demos)"
    )
    output_dir: Path = Path("runs")
    seed: int = 0
    replicates: int = Field(3, ge=1, description="seed replications of each stage's best node")
    proposer: Literal["sobol", "model"] = "model"
    stages: dict[Literal["preliminary", "hyperparameter", "agenda", "ablation"], StageConfig] = Field(
        default_factory=_default_stages
    )
    budgets: Budgets = Field(default_factory=Budgets)
    resources: dict[str, Resources] = Field(default_factory=_default_resources)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)

    @model_validator(mode="before")
    @classmethod
    def _sandbox_shorthand(cls, data: Any) -> Any:
        # `sandbox: local` is the common case; the mapping form carries provider options.
        if isinstance(data, dict) and isinstance(data.get("sandbox"), str):
            data = {**data, "sandbox": {"provider": data["sandbox"]}}
        # `ideas: [a.yaml, b.yaml]`: a bare path is an idea without budgets of its own.
        if isinstance(data, dict) and isinstance(data.get("ideas"), list):
            data = {**data, "ideas": [{"path": i} if isinstance(i, str) else i for i in data["ideas"]]}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> RunConfig:
        sources = sum((self.template is not None, self.idea is not None, bool(self.ideas)))
        if sources != 1:
            raise ValueError(
                "set exactly one of `template` (offline search), `idea` or `ideas` (LLM search)"
            )
        if self.template is None and self.llm is None:
            raise ValueError("idea mode (LLM search) needs an `llm:` section: providers, models and roles")
        for stage in STAGES:
            self.stages.setdefault(stage, _default_stages()[stage])  # type: ignore[index]
        self.resources.setdefault("default", Resources())
        return self

    def resources_for(self, kind: str) -> Resources:
        return self.resources.get(kind, self.resources["default"])

    def idea_sources(self) -> list[IdeaSource]:
        """The ideas of an LLM run: `idea` is a forest of one."""
        return [IdeaSource(path=self.idea)] if self.idea is not None else list(self.ideas)


def format_validation_error(source: str, err: ValidationError) -> str:
    lines = [f"{source}: invalid configuration"]
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling and indentation)"
        value = e.get("input")
        shown = "" if e["type"] in ("missing",) or isinstance(value, dict) else f" = {value!r}"
        lines.append(f"  {where}{shown}: {msg}")
    return "\n".join(lines)


def load_yaml(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None


def load_config(path: Path) -> RunConfig:
    """Load and validate a run config.

    `template` and `idea` are relative to the config file; `output_dir` to the working directory.
    """
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(str(path), e)) from None
    base = path.parent
    updates: dict[str, Any] = {}
    for field in ("template", "idea"):
        value = getattr(cfg, field)
        if value is not None and not value.is_absolute():
            updates[field] = (base / value).resolve()
    updates["output_dir"] = cfg.output_dir.resolve()  # relative to where silva runs
    if cfg.ideas:
        updates["ideas"] = [i.model_copy(update={"path": (base / i.path).resolve()}) for i in cfg.ideas]
    if cfg.scripted_fn is not None and ".py:" in cfg.scripted_fn:
        file, _, fn = cfg.scripted_fn.rpartition(":")
        updates["scripted_fn"] = f"{(base / file).resolve()}:{fn}"
    cfg = cfg.model_copy(update=updates)
    if cfg.template is not None and not (cfg.template / "template.yaml").is_file():
        raise ConfigError(
            f"{path}: template = {str(cfg.template)!r}: no template.yaml there; "
            "point `template` at a directory holding template.yaml and the experiment script"
        )
    if cfg.idea is not None and not cfg.idea.is_file():
        raise ConfigError(f"{path}: idea = {str(cfg.idea)!r}: file not found")
    for i, source in enumerate(cfg.ideas):
        if not source.path.is_file():
            raise ConfigError(f"{path}: ideas.{i}.path = {str(source.path)!r}: file not found")
    return cfg
