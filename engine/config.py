"""The engine's own config sections (budgets, executor, resources), the YAML loader and the
error formatter every section shares. The run config that assembles all sections lives in
silva/config.py; engine code sees it through the `EngineSettings` protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import ConfigError

MAX_ECHO = 200  # characters of a bad value shown in an error message


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budgets(Strict):
    wall_clock_s: float | None = Field(3600.0, gt=0, description="whole run, summed over resumes")
    node_timeout_s: float = Field(300.0, gt=0, description="deadline of one experiment attempt")
    max_nodes: int | None = Field(None, ge=1, description="all nodes of the run, every kind")
    dollars: float | None = Field(None, ge=0, description="LLM spend for the run")


class Resources(Strict):
    num_cpus: float = Field(1.0, ge=0)
    num_gpus: float = Field(0.0, ge=0)
    memory_mb: int = Field(2048, ge=64, description="memory of the attempt: Ray's reservation and the sandbox limit")

    # Cluster scale (issue 10): a fraction shares one GPU; Ray accepts only whole numbers above 1.
    @field_validator("num_gpus")
    @classmethod
    def _whole_above_one(cls, v: float) -> float:
        if v > 1 and not float(v).is_integer():
            raise ValueError(f"a fraction of a GPU is for sharing one device; above 1 ask for a whole number (got {v:g})")
        return v


def default_resources() -> dict[str, Resources]:
    return {"default": Resources(), "aggregation": Resources(num_cpus=0.5, memory_mb=1024)}


class ExecutorConfig(Strict):
    kind: Literal["ray", "inprocess"] = "ray"
    address: str | None = Field(None, description="Ray address; None starts a private local cluster")
    max_in_flight: int = Field(4, ge=1, description="attempts running at once")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a local Ray cluster")
    # Cluster scale (issue 10): see docs/cluster.md.
    dashboard: bool = Field(False, description="start Ray's dashboard with a private local cluster; its address is printed")
    ray_output: bool = Field(False, description="show Ray's own startup messages and worker logs in the terminal")


class EngineSettings(Protocol):
    """What the dispatch loop reads of the run config."""

    @property
    def budgets(self) -> Budgets: ...

    @property
    def executor(self) -> ExecutorConfig: ...

    def resources_for(self, kind: str) -> Resources: ...


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_ECHO else text[:MAX_ECHO] + f"... ({len(text)} characters)"


def format_validation_error(source: str, err: ValidationError) -> str:
    lines = [f"{source}: invalid configuration"]
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling and indentation)"
        value = e.get("input")
        shown = "" if e["type"] in ("missing",) or isinstance(value, dict) else f" = {_shown(value)}"
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
