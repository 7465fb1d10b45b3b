"""Idea files: what an LLM search sets out to test (YAML or JSON), validated with clear errors.

Silva's own keys are snake_case; the keys of AI-Scientist idea JSON ("Name", "Title",
"Short Hypothesis", "Abstract", "Experiments", "Risk Factors and Limitations") are accepted too,
so an idea produced by that ideation step runs as is once it declares its metrics.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from engine.config import format_validation_error, load_yaml
from engine.errors import ConfigError
from engine.node import MetricSpec
from search.config import IdeaSource

MAX_DATA_BYTES = 64 * 1024 * 1024  # data files travel by path, but every attempt copies them


def _alias(*names: str) -> Any:
    return AliasChoices(*names)


class Idea(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(
        "", validation_alias=_alias("name", "Name"), description="slug; default: from the title"
    )
    title: str = Field(min_length=1, validation_alias=_alias("title", "Title"))
    hypothesis: str = Field(min_length=1, validation_alias=_alias("hypothesis", "Short Hypothesis"))
    abstract: str = Field("", validation_alias=_alias("abstract", "Abstract"))
    experiments: list[str] = Field(
        default_factory=list, validation_alias=_alias("experiments", "Experiments")
    )
    risks: list[str] = Field(
        default_factory=list, validation_alias=_alias("risks", "Risk Factors and Limitations")
    )
    related_work: str = Field("", validation_alias=_alias("related_work", "Related Work"))
    metrics: list[MetricSpec] = Field(min_length=1, description="what results.json must report; one primary")
    datasets: list[Path] = Field(default_factory=list, description="files copied to data/ of every attempt")
    heldout_data: list[Path] = Field(
        default_factory=list, description="files copied to data/heldout/ only for held-out evaluation"
    )

    @field_validator("experiments", "risks", mode="before")
    @classmethod
    def _text_or_list(cls, v: Any) -> Any:
        # AI-Scientist ideas give these as one paragraph; Silva keeps a list of items.
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> Idea:
        if not self.name:
            self.name = re.sub(r"[^a-z0-9]+", "_", self.title.lower()).strip("_")[:48] or "idea"
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.name):
            raise ValueError(f"name {self.name!r} may use only letters, digits, '.', '_' and '-'")
        if sum(m.primary for m in self.metrics) > 1:
            raise ValueError("at most one metric may be `primary: true`")
        if not any(m.primary for m in self.metrics):
            self.metrics[0] = self.metrics[0].model_copy(update={"primary": True})
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"metric names repeat: {names}")
        return self

    @property
    def primary(self) -> MetricSpec:
        return next(m for m in self.metrics if m.primary)

    def describe(self) -> str:
        """The idea as the LLM sees it."""
        parts = [f"Title: {self.title}", f"Hypothesis: {self.hypothesis}"]
        if self.abstract:
            parts.append(f"Abstract: {self.abstract}")
        if self.experiments:
            parts.append("Planned experiments:\n" + "\n".join(f"- {e}" for e in self.experiments))
        if self.risks:
            parts.append("Risks and limitations:\n" + "\n".join(f"- {r}" for r in self.risks))
        return "\n".join(parts)


def load_idea(path: Path) -> Idea:
    """Parse and validate one idea file; data paths become absolute (relative to the file)."""
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: file not found") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON: {e}") from None
        except (UnicodeDecodeError, OSError) as e:  # not UTF-8, a directory, unreadable
            raise ConfigError(f"{path}: cannot read as JSON text ({type(e).__name__})") from None
    else:
        data = load_yaml(path)
    if isinstance(data, list):
        raise ConfigError(
            f"{path}: holds a list of {len(data)} ideas; one idea per file (list files under `ideas:`)"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping (title, hypothesis, metrics, ...), got {type(data).__name__}"
        )
    try:
        idea = Idea.model_validate(data)
    except ValidationError as e:
        raise ConfigError(
            format_validation_error(str(path), e).replace("invalid configuration", "invalid idea")
        ) from None
    resolved: dict[str, list[Path]] = {}
    total = 0
    for field in ("datasets", "heldout_data"):
        files = [p if p.is_absolute() else (path.parent / p).resolve() for p in getattr(idea, field)]
        for i, f in enumerate(files):
            if not f.is_file():
                raise ConfigError(f"{path}: {field}.{i} = {str(f)!r}: file not found")
            total += f.stat().st_size
        resolved[field] = files
    if total > MAX_DATA_BYTES:
        raise ConfigError(
            f"{path}: data files total {total / 2**20:.0f} MiB; at most {MAX_DATA_BYTES // 2**20} MiB"
        )
    return idea.model_copy(update=resolved)


def load_ideas(sources: list[IdeaSource]) -> list[Idea]:
    ideas = [load_idea(s.path) for s in sources]
    names = [i.name for i in ideas]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(
            f"ideas: two ideas share the name {dupes[0]!r}; set a distinct `name:` in each idea file"
        )
    return ideas


def run_metrics(ideas: list[Idea]) -> list[MetricSpec]:
    """The run's metric table: every idea's metrics by name, the first idea's primary first.

    Each tree decides on its own idea's primary metric; the run-level list is for display and
    aggregation, so one name must mean one direction across the forest.
    """
    out: dict[str, MetricSpec] = {}
    for idea in ideas:
        for m in idea.metrics:
            known = out.get(m.name)
            if known is not None and known.direction != m.direction:
                raise ConfigError(
                    f"ideas: metric {m.name!r} is {known.direction} in one idea and {m.direction} in "
                    f"{idea.name!r}; rename one of them"
                )
            out.setdefault(m.name, m.model_copy(update={"primary": False}))
    first = ideas[0].primary.name
    return [out[first].model_copy(update={"primary": True})] + [m for n, m in out.items() if n != first]
