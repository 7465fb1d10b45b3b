"""Typed outcomes: what an attempt returns besides its status, metrics and artifacts.

Each family of jobs (LLM operators, aggregation, best-node selection, writeup, review, discovery…)
declares a pydantic subclass of `NodeOutcome` with a `family` literal; subclasses register themselves,
so the journal reads any family back by name and a new family needs no change here. A family
may also read the untyped `extra` dict of runs written before the event format had outcomes
(`from_legacy`), so old run directories still open.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

_FAMILIES: dict[str, type[NodeOutcome]] = {}


class NodeOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    family: str
    family_name: ClassVar[str] = ""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        default = cls.model_fields["family"].default
        if isinstance(default, str) and default:
            cls.family_name = default
            _FAMILIES[default] = cls

    @classmethod
    def from_legacy(cls, extra: dict[str, Any]) -> NodeOutcome | None:
        """This family's outcome from an event-format-1 `extra` dict, or None if not of it."""
        return None


class UnknownOutcome(NodeOutcome):
    """An outcome whose family is not imported in this process: kept verbatim, never lost."""

    model_config = ConfigDict(extra="allow")

    family: str = ""


def load_outcome(value: Any) -> NodeOutcome | None:
    if value is None or isinstance(value, NodeOutcome):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"an outcome is an object with a `family`, got {type(value).__name__}")
    cls = _FAMILIES.get(str(value.get("family", "")))
    return cls.model_validate(value) if cls is not None else UnknownOutcome.model_validate(value)


def legacy_outcome(extra: dict[str, Any]) -> NodeOutcome | None:
    """The outcome of an event-format-1 `extra` dict: the first family that recognises it."""
    for cls in _FAMILIES.values():
        outcome = cls.from_legacy(extra)
        if outcome is not None:
            return outcome
    return UnknownOutcome.model_validate({"family": "legacy", **extra}) if extra else None


def _dump(value: NodeOutcome | None) -> dict[str, Any] | None:
    return None if value is None else value.model_dump(mode="json")


# A field holding any registered outcome: validated by its family, dumped with every field.
OutcomeField = Annotated[NodeOutcome | None, BeforeValidator(load_outcome), PlainSerializer(_dump)]
