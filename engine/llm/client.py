"""`LLM`: what node code calls. Picklable whenever its transport is (the Ray actor transport is),
so it can be handed to Ray tasks; it carries no keys, only a way to reach the gateway."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar, overload

from pydantic import BaseModel

from engine.llm.config import Capabilities, RoleConfig
from engine.llm.errors import StructuredOutputError
from engine.llm.prompt_budget import PromptBudget
from engine.llm.structured import ParseFailure, after_cut, output_schema, parse_output, reask, shorter_schema
from engine.llm.types import (
    EMBEDDING_ROLE,
    Completion,
    Embeddings,
    EmbedRequest,
    LLMRequest,
    Message,
    OutputSchema,
)

T = TypeVar("T", bound=BaseModel)
# The request of one ask of a chain: (turns, schema, re-ask number).
Ask = Callable[[list[Message], OutputSchema | None, int], LLMRequest]


class Transport(Protocol):
    def call(self, request: LLMRequest) -> Completion: ...

    def embed(self, request: EmbedRequest) -> Embeddings: ...

    def ledger_note(self, request: LLMRequest, error: str) -> None:
        """One ledger line (cause "invalid") for a structured chain that ended without a valid
        answer, `request` being its last ask; nothing is sent or paid."""
        ...


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
        given no budget for (a bare transport in tests) gets the config's defaults: a model's
        context and a role's max_tokens."""
        if role in self.budgets:
            return self.budgets[role]
        return PromptBudget(
            role=role,
            context_tokens=Capabilities().context_tokens,
            max_tokens=RoleConfig.model_fields["max_tokens"].default,
        )

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
        fails validation is re-asked at most `max_reasks` times (`_validated`), then
        `StructuredOutputError` (at once when a validator raised `FinalAnswer`). Raises
        `BudgetExceeded` when the run's dollars are spent. `blocking`: a decision waits for the answer
        (the gateway sends it twice at once, docs/llm.md). `context`: what the call is, as data
        for scripted providers (operator, node...); never sent to a real model."""
        turns = _as_messages(messages)
        chain = uuid.uuid4().hex if output_type is not None else None

        def ask(history: list[Message], schema: OutputSchema | None, reask: int) -> LLMRequest:
            return LLMRequest(
                messages=tuple(history),
                role=role,
                output_schema=schema,
                node_id=node_id,
                stage=stage,
                idea=idea,
                attempt=attempt,
                blocking=blocking,
                context={k: str(v) for k, v in (context or {}).items()},
                chain=chain,
                reask=reask,
            )

        if output_type is None:
            return self.transport.call(ask(turns, None, 0))
        return self._validated(ask, turns, output_type, f"role {role!r} (node {node_id})")

    def _validated(self, ask: Ask, turns: list[Message], output_type: type[T], who: str) -> T:
        """Ask until an answer validates as `output_type`, at most `max_reasks` times more. An
        answer cut off at the output limit is re-asked without it, under a schema with shorter
        bounds (`shorter_schema`); any other is shown back with its error. A chain that ends
        without a valid answer is one ledger line (`Transport.ledger_note`) before the error."""
        schema = output_schema(output_type)
        request = ask(turns, schema, 0)
        completion = self.transport.call(request)
        reasks, cuts, limit = 0, 0, None
        while True:
            try:
                return parse_output(completion, output_type)
            except ParseFailure as failure:
                if reasks == self.max_reasks or failure.final:
                    why = (
                        f"{who}: the answer did not validate as {output_type.__name__} after "
                        f"{reasks + 1} tries: {failure}"
                    )
                    self.transport.ledger_note(request, why)
                    raise StructuredOutputError(why) from failure
                reasks += 1
                if completion.truncated:
                    cuts += 1
                    schema, limit = shorter_schema(schema, completion, limit)
                    history = after_cut(turns, completion, limit, cuts)
                else:
                    history = [*request.messages, *reask(completion, failure)]
                request = ask(history, schema, reasks)
                completion = self.transport.call(request)

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
