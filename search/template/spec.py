"""Experiment templates: an experiment script plus `template.yaml`, which declares its search space."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.config import load_model
from engine.errors import ConfigError
from engine.node import MetricSpec

TEMPLATE_FILE = "template.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Param(_Strict):
    """One hyperparameter; `to_unit`/`from_unit` map it onto [0, 1] for the proposers."""

    type: Literal["float", "int", "choice"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    values: list[Any] | None = None
    default: Any
    method_only: bool = Field(False, description="only searched once the method is switched on")

    @model_validator(mode="after")
    def _check(self) -> Param:
        if self.type == "choice":
            if not self.values:
                raise ValueError("a choice parameter needs a non-empty `values` list")
            if self.default not in self.values:
                raise ValueError(f"default {self.default!r} is not one of values {self.values!r}")
            return self
        if self.low is None or self.high is None or not self.low < self.high:
            raise ValueError("a numeric parameter needs `low` < `high`")
        if self.log and self.low <= 0:
            raise ValueError("a log-scaled parameter needs `low` > 0")
        if not self.low <= self.default <= self.high:
            raise ValueError(f"default {self.default!r} is outside [{self.low}, {self.high}]")
        return self

    def from_unit(self, u: float) -> Any:
        u = min(max(u, 0.0), 1.0)
        if self.type == "choice":
            assert self.values is not None
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        assert self.low is not None and self.high is not None
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        return int(round(x)) if self.type == "int" else float(f"{x:.4g}")  # 4 significant digits

    def to_unit(self, value: Any) -> float:
        if self.type == "choice":
            assert self.values is not None
            return (self.values.index(value) + 0.5) / len(self.values)
        assert self.low is not None and self.high is not None
        if self.log:
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)


class Switch(_Strict):
    """A parameter set to `value` to turn something on: the idea's method, or one ablation."""

    name: str
    param: str
    value: Any = True
    description: str = ""


class TemplateSpec(_Strict):
    name: str
    description: str = ""
    command: list[str] = Field(default_factory=lambda: ["{python}", "experiment.py"])
    files: list[str] | None = Field(None, description="files copied into each workspace; default: all")
    metrics: list[MetricSpec] = Field(min_length=1)
    hyperparameters: dict[str, Param] = Field(default_factory=dict)
    method: Switch
    ablations: list[Switch] = Field(default_factory=list)
    fixed: dict[str, Any] = Field(default_factory=dict, description="parameters passed unchanged")

    @model_validator(mode="after")
    def _check(self) -> TemplateSpec:
        if sum(m.primary for m in self.metrics) > 1:
            raise ValueError("at most one metric may be `primary: true`")
        if not any(m.primary for m in self.metrics):
            self.metrics[0] = self.metrics[0].model_copy(update={"primary": True})
        return self

    @property
    def primary(self) -> MetricSpec:
        return next(m for m in self.metrics if m.primary)

    def defaults(self) -> dict[str, Any]:
        switches = {self.method.param: False, **{a.param: False for a in self.ablations}}
        return {**self.fixed, **switches, **{k: p.default for k, p in self.hyperparameters.items()}}


class Template:
    """A loaded template: its spec and the bytes of the files every attempt gets."""

    def __init__(self, root: Path, spec: TemplateSpec, files: dict[str, bytes]) -> None:
        self.root, self.spec, self.files = root, spec, files

    @classmethod
    def load(cls, root: Path) -> Template:
        path = root / TEMPLATE_FILE
        spec = load_model(path, TemplateSpec, "template settings")
        names = spec.files or sorted(
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file() and p.name != TEMPLATE_FILE and "__pycache__" not in p.parts
        )
        missing = [n for n in names if not (root / n).is_file()]
        if missing:
            raise ConfigError(f"{path}: files = {missing!r}: not found in {root}")
        script = next((c for c in spec.command if c.endswith(".py")), None)
        if script and script not in names:
            raise ConfigError(f"{path}: command runs {script!r}, which is not among the template's files")
        return cls(root, spec, {n: (root / n).read_bytes() for n in names})
