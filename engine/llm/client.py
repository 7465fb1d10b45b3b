"""`LLM`: what node code calls. Picklable whenever its transport is (the Ray actor transport is),
so it can be handed to Ray tasks; it carries no keys, only a way to reach the gateway."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar, overload

from pydantic import BaseModel

from engine.llm.errors import StructuredOutputError
from engine.llm.prompt_budget import PromptBudget
from engine.llm.structured import ParseFailure, output_schema, parse_output, reask
from engine.llm.types import EMBEDDING_ROLE, Completion, Embeddings, EmbedRequest, LLMRequest, Message

T = TypeVar("T", bound=BaseModel)


class Transport(Protocol):
    def call(self, request: LLMRequest) -> Completion: ...

    def embed(self, request: EmbedRequest) -> Embeddings: ...


class LLM:
    def __init__(
        self,
        transport: Transport,
        *,
        max_reasks: int = 2,
        budgets: Mapping[str, PromptBudget] | None = None,
    ) -> None:
        self.transport = transport
        self.max_reasks = max_reasks
        self.budgets = dict(budgets or {})

    def budget(self, role: str) -> PromptBudget:
        """What a prompt of `role` may hold (engine/llm/prompt_budget.py); a role the client was
        given no budget for (a bare transport in tests) gets the default model context."""
        return self.budgets.get(role) or PromptBudget(role=role, context_tokens=128_000, max_tokens=4096)

    @overload
    def complete(
        self,
        messages: str | Message | Sequence[Message],
        *,
        role: str,
        output_type: None = None,
        node_id: str | None = None,
        stage: str | None = None,
        idea: str | None = None,
        attempt: int = 0,
        blocking: bool = False,
        context: Mapping[str, object] | None = None,
    ) -> Completion: ...

    @overload
    def complete(
        self,
        messages: str | Message | Sequence[Message],
        *,
        role: str,
        output_type: type[T],
        node_id: str | None = None,
        stage: str | None = None,
        idea: str | None = None,
        attempt: int = 0,
        blocking: bool = False,
        context: Mapping[str, object] | None = None,
    ) -> T: ...

    def complete(
        self,
        messages: str | Message | Sequence[Message],
        *,
        role: str,
        output_type: type[T] | None = None,
        node_id: str | None = None,
        stage: str | None = None,
        idea: str | None = None,
        attempt: int = 0,
        blocking: bool = False,
        context: Mapping[str, object] | None = None,
    ) -> Completion | T:
        """One answer for `role`. With `output_type`, a validated instance of it: an answer that
        fails validation is re-asked (with the error) at most `max_reasks` times, then
        `StructuredOutputError` (at once when a validator raised `FinalAnswer`). Raises
        `BudgetExceeded` when the run's dollars are spent. `blocking`: a decision waits for the answer
        (the gateway sends it twice at once, docs/llm.md). `context`: what the call is, as data
        for scripted providers (operator, node...); never sent to a real model."""
        turns = _as_messages(messages)
        schema = output_schema(output_type) if output_type is not None else None

        def ask(history: list[Message]) -> Completion:
            request = LLMRequest(
                messages=tuple(history),
                role=role,
                output_schema=schema,
                node_id=node_id,
                stage=stage,
                idea=idea,
                attempt=attempt,
                blocking=blocking,
                context={k: str(v) for k, v in (context or {}).items()},
            )
            return self.transport.call(request)

        completion = ask(turns)
        if output_type is None:
            return completion
        reasks = 0
        while True:
            try:
                return parse_output(completion, output_type)
            except ParseFailure as failure:
                if reasks == self.max_reasks or failure.final:
                    raise StructuredOutputError(
                        f"role {role!r} (node {node_id}): the answer did not validate as "
                        f"{output_type.__name__} after {reasks + 1} tries: {failure}"
                    ) from failure
                reasks += 1
                turns = [*turns, *reask(completion, failure)]
                completion = ask(turns)

    def embed(
        self,
        texts: Sequence[str],
        *,
        role: str = EMBEDDING_ROLE,
        node_id: str | None = None,
        stage: str | None = None,
        idea: str | None = None,
    ) -> list[list[float]]:
        """One vector per text, in order, from the model `role` maps to (it must have the
        `embeddings` capability). Cached per text, so texts embedded before cost nothing.
        Raises `BudgetExceeded` when the run's dollars are spent, `LLMConfigError` when the role
        cannot embed."""
        if isinstance(texts, str):
            raise TypeError("LLM.embed takes a sequence of texts, not one string")
        if not texts:
            return []
        request = EmbedRequest(texts=tuple(texts), role=role, node_id=node_id, stage=stage, idea=idea)
        return [list(v) for v in self.transport.embed(request).vectors]


def _as_messages(messages: str | Message | Sequence[Message]) -> list[Message]:
    if isinstance(messages, str):
        return [Message.user(messages)]
    if isinstance(messages, Message):
        return [messages]
    return list(messages)
