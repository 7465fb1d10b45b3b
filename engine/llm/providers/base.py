"""What every provider implements, and the error classification the gateway's retries rely on."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.llm.prices import ResolvedModel
from engine.llm.types import Completion, Embeddings, Message, OutputSchema, TextPart


@dataclass(frozen=True)
class ProviderCall:
    """One HTTP call's worth of work, fully resolved by the gateway."""

    model: ResolvedModel
    messages: tuple[Message, ...]
    role: str
    temperature: float
    max_tokens: int
    timeout_s: float
    reasoning_effort: str | None = None
    output_schema: OutputSchema | None = None
    context: Mapping[str, str] = field(default_factory=dict)  # LLMRequest.context: never on the wire


@dataclass(frozen=True)
class EmbedCall:
    """One embeddings request (a batch of texts the cache did not have), resolved by the gateway."""

    model: ResolvedModel
    texts: tuple[str, ...]
    role: str
    timeout_s: float
    dimensions: int | None = None


class Provider(Protocol):
    async def complete(self, call: ProviderCall) -> Completion: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class EmbeddingProvider(Protocol):
    """A provider with an embeddings endpoint (OpenAI, OpenAI-compatible, scripted)."""

    async def embed(self, call: EmbedCall) -> Embeddings: ...


class ProviderError(Exception):
    """A failed call, classified: `retryable` says whether the gateway may try again."""

    def __init__(
        self, message: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, `retry-after` (seconds or an HTTP date), or None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify_sdk_error(exc: Exception, sdk: Any) -> ProviderError:
    """Map an Anthropic or OpenAI SDK exception (both share this shape) to a ProviderError.

    Retryable: timeouts, connection errors, 408/409/429, 5xx (incl. 529 overloaded), and a body
    that is not valid JSON (a proxy or server glitch). Other 4xx are the request's fault.
    """
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"timed out: {exc}", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(f"connection error: {exc}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        retryable = status in (408, 409, 429) or status >= 500
        message = f"HTTP {status}: {getattr(exc, 'message', exc)}"
        return ProviderError(
            message, retryable=retryable, retry_after=parse_retry_after(exc.response.headers), status=status
        )
    if isinstance(exc, (json.JSONDecodeError, sdk.APIResponseValidationError)):
        return ProviderError(f"malformed response body: {exc}", retryable=True)
    return ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)


def schema_instruction(schema: OutputSchema) -> str:
    return (
        "Answer with one JSON object and nothing else. It must validate against this JSON schema:\n"
        f"{json.dumps(schema.schema_, indent=1)}"
    )


def with_schema_instruction(messages: tuple[Message, ...], schema: OutputSchema) -> tuple[Message, ...]:
    """For models without native structured output: ask for the JSON in words, in the last turn."""
    last = messages[-1]
    extra = TextPart(text=schema_instruction(schema))
    return (*messages[:-1], last.model_copy(update={"parts": (*last.parts, extra)}))


def split_system(messages: tuple[Message, ...]) -> tuple[str, tuple[Message, ...]]:
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    return system, tuple(m for m in messages if m.role != "system")
