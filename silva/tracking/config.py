"""The `tracking:` section of the run config: which experiment tracker receives the run."""

from __future__ import annotations

import importlib.util
from typing import Any

from pydantic import Field, field_validator, model_validator

from engine.config import Strict

BACKENDS_PACKAGE = "silva.tracking.backends"


class TrackingConfig(Strict):
    """Off unless present. Records are sent by a process of their own that reads the journal, so
    a slow or absent tracker never holds up the run (docs/tracking.md)."""

    backend: str = Field("mlflow", description="a module of silva/tracking/backends/: mlflow, wandb")
    uri: str | None = Field(
        None,
        description="tracking URI (MLflow: http://host:port, file:///path, sqlite:///...); "
        "default: a store in the run directory",
    )
    experiment: str | None = Field(
        None, description="experiment (W&B: project) name; default: the run's name"
    )
    retry_max_s: float = Field(
        30.0, gt=0, description="longest pause between tries while the tracker does not answer"
    )
    drain_s: float = Field(
        10.0, ge=0, description="how long the run waits at its end for the tracker to catch up"
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"backend": data} if isinstance(data, str) else data  # `tracking: mlflow`

    @field_validator("backend")
    @classmethod
    def _known(cls, v: str) -> str:
        known = available_backends()
        if v not in known:
            raise ValueError(f"unknown tracking backend {v!r}; available: {', '.join(known)}")
        return v


def available_backends() -> list[str]:
    """Every module of the backends package: adding one is adding a module."""
    import pkgutil

    spec = importlib.util.find_spec(BACKENDS_PACKAGE)
    paths = list(spec.submodule_search_locations or []) if spec is not None else []
    return sorted(m.name for m in pkgutil.iter_modules(paths) if not m.name.startswith("_"))
