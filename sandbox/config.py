"""The `sandbox:` section of a run config: a registered provider and its options, both checked
when the config loads (each provider declares a pydantic model of its options, sandbox/base.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from sandbox.base import option_problems, provider_names


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "local", description="a registered provider: local, docker, none, or one another package adds"
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        validate_default=True,  # a provider may require an option
        description="provider options, e.g. image",
    )

    @field_validator("provider")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in provider_names():
            raise ValueError(option_problems(name, {})[0])
        return name

    @field_validator("options")
    @classmethod
    def _typed(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("provider")  # absent when the provider itself was wrong
        problems = option_problems(name, options) if name is not None else []
        if problems:
            raise ValueError("; ".join(problems))
        return options
