"""The run config: one YAML file, assembled from the sections each package owns and validated
by pydantic, with errors a person can act on (field, value, what is allowed; exit 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

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
from search.modes import Mode, mode_of, sections
from search.plan import StagePlan
from silva.rolling import IdeationSection
from silva.tracking.config import TrackingConfig
from writeup.config import WriteupConfig


class RunConfig(Strict):
    # A search mode's own section (`discovery:`...) is no field here: each registered mode brings
    # its own (search/modes.py), validated by `_sections` and kept as an extra attribute.
    model_config = ConfigDict(extra="allow")

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
    ideation: IdeationSection | None = Field(
        None, description="a rolling forest: new ideas as the slots need them (docs/search.md)"
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
    tracking: TrackingConfig | None = Field(
        None, description="send the run to MLflow or Weights & Biases as it goes (docs/tracking.md)"
    )

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

    @model_validator(mode="wrap")
    @classmethod
    def _sections(cls, data: Any, handler: ModelWrapValidatorHandler[RunConfig]) -> RunConfig:
        """The shared fields by pydantic, each registered mode's section by its own model, then
        the checks that need the mode; every problem reported at once, under its key."""
        if not isinstance(data, dict):
            return handler(data)
        owned = sections()
        errors: list[Any] = [
            {"type": "extra_forbidden", "loc": (key,), "input": value}
            for key, value in data.items()
            if key not in cls.model_fields and key not in owned
        ]
        found: dict[str, Any] = {key: None for key in owned}
        for key, model in owned.items():
            try:
                found[key] = None if data.get(key) is None else model.model_validate(data[key])
            except ValidationError as e:
                errors += [_under(key, err) for err in e.errors()]
        try:
            cfg = handler({k: v for k, v in data.items() if k in cls.model_fields})
        except ValidationError as e:
            if not errors:
                raise
            errors = [*(_under(None, err) for err in e.errors()), *errors]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        cfg.__pydantic_extra__ = found
        cfg._check_mode()
        return cfg

    def _check_mode(self) -> None:
        mode = self.search_mode
        has_ideas = self.idea is not None or bool(self.ideas)
        if self.variants and self.template is None:
            raise ValueError("`variants` are variants of a template: set `template` too")
        if self.variants and has_ideas:
            raise ValueError(
                "`variants` (an offline template forest) and `idea`/`ideas` (LLM search from the template) "
                "do not combine; remove `variants`, or remove `idea`/`ideas` for the offline forest"
            )
        if len({v.name for v in self.variants}) != len(self.variants):
            raise ValueError("variants: each variant needs its own `name`")
        if mode.check is not None:
            mode.check(self)
        if mode.needs_llm and self.llm is None:
            raise ValueError(f"{mode.name} mode needs an `llm:` section: providers, models and roles")
        plan = mode.plan
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

    def section(self, key: str) -> Any:
        """A registered mode's section (`discovery`...), None when the config has none."""
        return (self.__pydantic_extra__ or {}).get(key)

    @property
    def search_mode(self) -> Mode:
        return mode_of(self)

    @property
    def mode(self) -> str:
        return self.search_mode.name

    @property
    def plan(self) -> StagePlan:
        return self.search_mode.plan

    def resources_for(self, kind: str) -> Resources:
        return self.resources.get(kind, self.resources["default"])

    def idea_sources(self) -> list[IdeaSource]:
        """The ideas of an LLM run: `idea` is a forest of one."""
        return [IdeaSource(path=self.idea)] if self.idea is not None else list(self.ideas)


def _under(key: str | None, err: ErrorDetails) -> InitErrorDetails:
    """`err` re-raised under `key`, as it was: a custom error keeps any type pydantic knows (a path
    error's type cannot be raised again by name) and its message."""
    return {
        "type": PydanticCustomError(err["type"], "{msg}", {"msg": err["msg"]}),
        "loc": (key, *err["loc"]) if key is not None else err["loc"],
        "input": err["input"],
    }


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
        raise ConfigError(format_validation_error(str(path), e, RunConfig)) from None
    base = path.parent
    updates: dict[str, Any] = {}
    for field in ("template", "idea"):
        value = getattr(cfg, field)
        if value is not None and not value.is_absolute():
            updates[field] = (base / value).resolve()
    updates["output_dir"] = cfg.output_dir.resolve()  # relative to where silva runs
    mode = cfg.search_mode
    if mode.section is not None and mode.resolve is not None:  # its paths, like `template`'s
        updates[mode.section] = mode.resolve(cfg.section(mode.section), base)
    if cfg.ideation is not None:
        updates["ideation"] = cfg.ideation.resolved(base)
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
