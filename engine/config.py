"""The engine's own config sections (budgets, executor, resources), the YAML loader and the
error formatter every section shares. The run config that assembles all sections lives in
silva/config.py; engine code sees it through the `EngineSettings` protocol."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import ConfigError

MAX_ECHO = 200  # characters of a bad value shown in an error message
MAX_ERRORS = 20  # validation problems listed; the count of the rest follows
MAX_YAML_BYTES = 1_000_000  # a config, idea or template file
MAX_YAML_EXPANDED = 4 * MAX_YAML_BYTES  # characters once aliases are expanded


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budgets(Strict):
    wall_clock_s: float | None = Field(3600.0, gt=0, description="whole run, summed over resumes")
    node_timeout_s: float = Field(300.0, gt=0, description="deadline of one experiment attempt")
    max_nodes: int | None = Field(None, ge=1, description="all nodes of the run, every kind")
    dollars: float | None = Field(None, ge=0, description="LLM spend for the run")
    # Compute budgets (docs/budgets.md, engine/budgets.py): the run step's duration x the resources it held.
    gpu_hours: float | None = Field(
        None, gt=0, description="accelerator time; a fractional GPU counts as its fraction"
    )
    cpu_hours: float | None = Field(
        None, gt=0, description="CPU time reserved by attempts (num_cpus x duration)"
    )


class Resources(Strict):
    num_cpus: float = Field(1.0, ge=0)
    num_gpus: float = Field(0.0, ge=0)
    memory_mb: int = Field(
        2048, ge=64, description="memory of the attempt: Ray's reservation and the sandbox limit"
    )

    # Cluster scale (docs/cluster.md): a fraction shares one GPU; Ray accepts only whole numbers above 1.
    @field_validator("num_gpus")
    @classmethod
    def _whole_above_one(cls, v: float) -> float:
        if v > 1 and not float(v).is_integer():
            raise ValueError(
                f"a fraction of a GPU is for sharing one device; above 1 ask for a whole number (got {v:g})"
            )
        return v


# Node kinds whose jobs hold no experiment resources unless the config says otherwise: a selection
# waits on one LLM call; in the CPU pool (`ExecutorConfig.cpu_jobs`), the aggregation is Silva's
# own small computation and a paper draws and compiles on one CPU.
SUPPORT_RESOURCES = {
    "aggregation": Resources(num_cpus=0.5, memory_mb=1024),
    "selection": Resources(num_cpus=0, memory_mb=256),
    "paper": Resources(num_cpus=1, memory_mb=2048),
}


def default_resources() -> dict[str, Resources]:
    return {"default": Resources(), **SUPPORT_RESOURCES}


class ExecutorConfig(Strict):
    kind: Literal["ray", "inprocess"] = "ray"
    address: str | None = Field(None, description="Ray address; None starts a private local cluster")
    max_in_flight: int | None = Field(
        None,
        ge=1,
        description="experiment slots: attempts holding resources at once; null: as many as the cluster "
        "holds of the default node kind (its GPUs / the kind's GPUs, CPUs likewise), followed as nodes join "
        "or leave",
    )
    lookahead: int | None = Field(
        None,
        ge=0,
        description="proposals thinking ahead of free slots; null derives it from measured LLM and "
        "experiment times",
    )
    cpu_jobs: int | None = Field(
        None,
        ge=1,
        description="jobs at once in the CPU pool: work that computes but is no experiment (a paper's "
        "figures and LaTeX; an LLM writeup mostly waits on its model); they take no experiment slot and "
        "no GPU; null: as many as the experiment slots",
    )
    max_llm_steps: int = Field(
        64, ge=1, description="in-process executor: threads for steps that only wait on an LLM"
    )
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a local Ray cluster")
    start_attempts: int = Field(
        3, ge=1, description="tries to start a private local Ray cluster (waiting longer on a loaded host)"
    )
    # Cluster scale: see docs/cluster.md.
    dashboard: bool = Field(
        False, description="start Ray's dashboard with a private local cluster; its address is printed"
    )
    ray_output: bool = Field(
        False, description="show Ray's own startup messages and worker logs in the terminal"
    )


class EngineSettings(Protocol):
    """What the dispatch loop reads of the run config."""

    @property
    def budgets(self) -> Budgets: ...

    @property
    def executor(self) -> ExecutorConfig: ...

    def resources_for(self, kind: str) -> Resources: ...


def _shown(value: Any) -> str:
    return _trimmed(repr(value))


def _trimmed(text: str, limit: int = MAX_ECHO) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (`X | None`, `dict[str, X]`, `list[X]`...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _field_names(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys valid where `loc` points in `model`: loc parts that are not fields (dict keys,
    list indexes, union tags) keep the models reached so far."""
    models = [model]
    for part in loc:
        inner = [
            m
            for cls in models
            if isinstance(part, str) and part in cls.model_fields
            for m in _models_in(cls.model_fields[part].annotation)
        ]
        models = inner or models
    return sorted({f.alias or name for cls in models for name, f in cls.model_fields.items()})


def unknown_key_hint(key: str, valid: list[str], *, list_valid: bool = True) -> str:
    """The nearest valid key ("did you mean `max_nodes`?"), else the valid keys (once per place:
    `list_valid` is False when an earlier line already listed them)."""
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if near:
        return f"unknown field; did you mean `{near[0]}`?"
    if not list_valid:
        return "unknown field (valid keys as above)"
    shown = ", ".join(valid) if len(valid) <= 12 else ", ".join(valid[:12]) + ", ..."
    return f"unknown field (check its spelling and indentation; valid here: {shown})"


def format_validation_error(source: str, err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """`model`: the class validated, for "did you mean" on a misspelled key."""
    errors = err.errors()
    lines = [f"{source}: invalid configuration"]
    listed: set[tuple[str, ...]] = set()  # places whose valid keys a line already listed
    for e in errors[:MAX_ERRORS]:
        where = _trimmed(".".join(str(p) for p in e["loc"]) or "(top level)")
        msg = _trimmed(e["msg"].removeprefix("Value error, "), 2 * MAX_ECHO)
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling and indentation)"
            if model is not None and e["loc"]:
                place = tuple(str(p) for p in e["loc"][:-1])
                msg = unknown_key_hint(
                    str(e["loc"][-1]), _field_names(model, e["loc"][:-1]), list_valid=place not in listed
                )
                if "valid here" in msg:
                    listed.add(place)
        value = e.get("input")
        shown = "" if e["type"] in ("missing",) or isinstance(value, dict) else f" = {_shown(value)}"
        lines.append(f"  {where}{shown}: {msg}")
    if len(errors) > MAX_ERRORS:
        lines.append(f"  ... and {len(errors) - MAX_ERRORS} more problem(s)")
    return "\n".join(lines)


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Characters and nodes the document stands for once every alias is expanded: an alias
    costs what its anchor costs again (a "billion laughs" file is small but expands hugely)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias (an anchor inside itself) is counted once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1 + len(str(node.value))
    memo[key] = size
    return size


def _duplicate_key(node: yaml.Node, seen: set[int]) -> tuple[str, int, int] | None:
    """The first key written twice in one mapping, with both lines: YAML's loaders keep the last
    silently, so a pasted block that repeats `budgets:` would drop the first one's settings."""
    if id(node) in seen:  # an alias: its anchor was checked already
        return None
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for k, _ in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                if k.value in lines:
                    return k.value, lines[k.value], k.start_mark.line + 1
                lines[k.value] = k.start_mark.line + 1
    children = node.value if isinstance(node, yaml.SequenceNode) else []
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    for child in children:
        if found := _duplicate_key(child, seen):
            return found
    return None


def load_yaml(path: Path) -> Any:
    """A YAML file as Python data, refusing files over MAX_YAML_BYTES and documents whose aliases
    expand beyond MAX_YAML_EXPANDED; error messages quote at most a few hundred characters."""
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise ConfigError(f"{path}: {size} bytes; a Silva YAML file may hold at most {MAX_YAML_BYTES}")
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a YAML file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    try:
        # libyaml's parser when built in (a run's 100 KB config snapshot: 0.1 s, not 1.5 s); both
        # readers refuse control characters here.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {_trimmed(str(e), 3 * MAX_ECHO)}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_YAML_EXPANDED:
            raise ConfigError(
                f"{path}: its aliases (*name) expand to more than {MAX_YAML_EXPANDED} characters; "
                "repeat less through anchors, or write the values out"
            )
        if duplicate := _duplicate_key(node, set()):
            key, first, second = duplicate
            raise ConfigError(
                f"{path}: key {_trimmed(key)!r} is written twice, on lines {first} and {second}; "
                "keep one (YAML would silently use the last)"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        if "maximum nesting depth" in str(e):  # PyYAML 6.0.3+ limits depth itself
            raise ConfigError(f"{path}: nested too deeply to be a Silva YAML file") from None
        raise ConfigError(f"{path}: not valid YAML: {_trimmed(str(e), 3 * MAX_ECHO)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a Silva YAML file") from None
    finally:
        loader.dispose()


M = TypeVar("M", bound=BaseModel)


def load_model(path: Path, model: type[M], what: str = "settings") -> M:
    """A YAML file holding a mapping, validated as `model`; every problem is a ConfigError
    naming the file, the field, the value and what is allowed."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of {what} at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(str(path), e, model)) from None
