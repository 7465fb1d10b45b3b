"""The run config: one YAML file, assembled from the sections each package owns and validated
by pydantic, with errors a person can act on (field, value, what is allowed; exit 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from engine.config import (
    SUPPORT_RESOURCES,
    Budgets,
    ExecutorConfig,
    Resources,
    Strict,
    default_resources,
    format_validation_error,
    load_yaml,
)
from engine.errors import ConfigError
from engine.llm.config import LLMConfig
from review.config import ReviewConfig
from sandbox.config import SandboxConfig
from search.config import AllocationConfig, IdeaSource, SearchConfig, StageConfig, TemplateVariant
from search.discovery.config import DiscoveryConfig
from search.modes import plan_for
from search.plan import StagePlan
from writeup.config import WriteupConfig


class RunConfig(Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    template: Path | None = Field(
        None,
        description="template directory: offline search, or with `idea`/`ideas` the LLM search's starting "
        "code",
    )
    idea: Path | None = Field(None, description="idea file (LLM search)")
    ideas: list[IdeaSource] = Field(default_factory=list, description="several idea files: a forest")
    # docs/budgets.md: a forest of template ideas, and how a forest's compute is shared.
    variants: list[TemplateVariant] = Field(
        default_factory=list, description="a template forest: one idea per variant"
    )
    allocation: AllocationConfig = Field(default_factory=AllocationConfig)
    discovery: DiscoveryConfig | None = Field(
        None, description="data-driven discovery on a table (docs/discovery.md)"
    )
    writeup: WriteupConfig | None = Field(
        None, description="write the paper as a phase after the search (docs/writeup.md)"
    )
    review: ReviewConfig | None = Field(
        None, description="review the paper as the last phase (docs/review.md)"
    )
    search: SearchConfig = Field(default_factory=SearchConfig)
    llm: LLMConfig | None = Field(None, description="LLM providers, models and roles (idea mode)")
    scripted_fn: str | None = Field(
        None, description="`file.py:function` answering the scripted providers' calls (offline demos)"
    )
    output_dir: Path = Path("runs")
    seed: int = 0
    replicates: int = Field(3, ge=1, description="seed replications of each stage's best node")
    proposer: Literal["sobol", "model"] = "model"
    stages: dict[str, StageConfig] = Field(default_factory=dict, description="per stage of the mode's plan")
    budgets: Budgets = Field(default_factory=Budgets)
    resources: dict[str, Resources] = Field(default_factory=default_resources)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        # `sandbox: local` is the common case; the mapping form carries provider options.
        if isinstance(data, dict) and isinstance(data.get("sandbox"), str):
            data = {**data, "sandbox": {"provider": data["sandbox"]}}
        # `ideas: [a.yaml, b.yaml]`: a bare path is an idea without budgets of its own.
        if isinstance(data, dict) and isinstance(data.get("ideas"), list):
            data = {**data, "ideas": [{"path": i} if isinstance(i, str) else i for i in data["ideas"]]}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> RunConfig:
        # `template` with `idea`/`ideas` is the LLM search grown from the template's code (docs/search.md).
        has_ideas = self.idea is not None or bool(self.ideas)
        if self.template is not None and self.discovery is not None:
            raise ValueError(
                "`template` and `discovery` do not combine: discovery starts from a data table; remove one"
            )
        sources = sum(
            (
                self.template is not None and not has_ideas,
                self.idea is not None,
                bool(self.ideas),
                self.discovery is not None,
            )
        )
        if sources != 1:
            raise ValueError(
                "set exactly one of `template` (offline search), `idea` or `ideas` (LLM search; with "
                "`template`, grown from the template's code), `discovery` (data)"
            )
        if self.variants and self.template is None:
            raise ValueError("`variants` are variants of a template: set `template` too")
        if self.variants and has_ideas:
            raise ValueError(
                "`variants` (an offline template forest) and `idea`/`ideas` (LLM search from the template) "
                "do not combine; remove `variants`, or remove `idea`/`ideas` for the offline forest"
            )
        if len({v.name for v in self.variants}) != len(self.variants):
            raise ValueError("variants: each variant needs its own `name`")
        if self.mode != "template" and self.llm is None:
            what = (
                "`template` with `idea`/`ideas` (the LLM search from the template's code)"
                if self.template
                else f"{self.mode} mode"
            )
            raise ValueError(f"{what} needs an `llm:` section: providers, models and roles")
        plan = self.plan
        unknown = sorted(set(self.stages) - set(plan.names))
        if unknown:
            raise ValueError(
                f"stages: unknown stage(s) {', '.join(map(repr, unknown))}; "
                f"the {plan.mode} mode's stages are {', '.join(plan.names)}"
            )
        for spec in plan.stages:
            self.stages.setdefault(spec.name, StageConfig(max_nodes=spec.default_max_nodes))
        self.stages = {s: self.stages[s] for s in plan.names}  # the plan's order
        self.resources.setdefault("default", Resources())
        for kind, res in SUPPORT_RESOURCES.items():
            self.resources.setdefault(kind, res)
        return self

    @property
    def mode(self) -> str:
        if self.discovery is not None:
            return "discovery"
        return "template" if self.template is not None and self.idea is None and not self.ideas else "agentic"

    @property
    def plan(self) -> StagePlan:
        return plan_for(self.mode)

    def resources_for(self, kind: str) -> Resources:
        return self.resources.get(kind, self.resources["default"])

    def idea_sources(self) -> list[IdeaSource]:
        """The ideas of an LLM run: `idea` is a forest of one."""
        return [IdeaSource(path=self.idea)] if self.idea is not None else list(self.ideas)


def load_config(
    path: Path, *, check_files: bool = True, overrides: dict[str, Any] | None = None
) -> RunConfig:
    """Load and validate a run config.

    `template` and `idea` are relative to the config file; `output_dir` to the working directory.
    `check_files=False` for views of an existing run: its idea or template may have moved since.
    `overrides` replace top-level settings (`silva run --ideas` sets `idea`/`ideas`).
    """
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}"
        )
    data = {**data, **(overrides or {})}
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
    if cfg.discovery is not None:
        from search.discovery.strategy import resolve_paths

        updates["discovery"] = resolve_paths(cfg.discovery, base)
    if cfg.ideas:
        updates["ideas"] = [i.model_copy(update={"path": (base / i.path).resolve()}) for i in cfg.ideas]
    if cfg.scripted_fn is not None and ".py:" in cfg.scripted_fn:
        file, _, fn = cfg.scripted_fn.rpartition(":")
        updates["scripted_fn"] = f"{(base / file).resolve()}:{fn}"
    cfg = cfg.model_copy(update=updates)
    if check_files:
        check_sources(cfg, path)
    return cfg


def check_sources(cfg: RunConfig, path: Path) -> None:
    """The template, idea and idea files a run needs exist (before anything runs)."""
    # os.path.isfile: False (not a traceback) for a path this user may not even stat.
    if cfg.template is not None and not os.path.isfile(cfg.template / "template.yaml"):
        raise ConfigError(
            f"{path}: template = {str(cfg.template)!r}: no template.yaml there; "
            "point `template` at a directory holding template.yaml and the experiment script"
        )
    if cfg.idea is not None and not os.path.isfile(cfg.idea):
        raise ConfigError(f"{path}: idea = {str(cfg.idea)!r}: file not found")
    for i, source in enumerate(cfg.ideas):
        if not os.path.isfile(source.path):
            raise ConfigError(f"{path}: ideas.{i}.path = {str(source.path)!r}: file not found")
