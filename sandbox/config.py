"""The `sandbox:` section of a run config."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: Literal["local", "docker", "none"] = "local"
    options: dict[str, Any] = Field(default_factory=dict, description="provider options, e.g. image")
