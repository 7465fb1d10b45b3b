"""OpenAI Chat Completions and Embeddings through the `openai` SDK; also any OpenAI-compatible
endpoint by base URL (vLLM, Ollama, a LiteLLM proxy, OpenRouter)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from engine.llm.providers.base import (
    EmbedCall,
    ProviderCall,
    ProviderError,
    classify_sdk_error,
    with_schema_instruction,
)
from engine.llm.types import Completion, Embeddings, ImagePart, Message, StopReason, Usage

_STOP: dict[str, StopReason] = {
    "stop": "end",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _message(message: Message) -> dict[str, Any]:
    if message.role != "user" or not message.images:
        return {"role": message.role, "content": message.text}
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{part.b64()}"}})
        else:
            parts.append({"type": "text", "text": part.text})
    return {"role": "user", "content": parts}


class OpenAIProvider:
    def __init__(
        self, name: str, *, api_key: str | None, base_url: str | None = None, compatible: bool = False
    ) -> None:
        import openai

        self.name = name
        self._sdk = openai
        self._compatible = compatible
        # Local servers (Ollama, vLLM) need no key, but the SDK insists on one being set.
        # max_retries=0: the gateway owns retries.
        self._client = openai.AsyncOpenAI(api_key=api_key or "unused", base_url=base_url, max_retries=0)

    def _params(self, call: ProviderCall) -> dict[str, Any]:
        caps = call.model.capabilities
        messages = call.messages
        schema = call.output_schema
        if schema is not None and not (caps.json_schema or caps.tools):
            messages = with_schema_instruction(messages, schema)
        params: dict[str, Any] = {
            "model": call.model.model,
            "messages": [_message(m) for m in messages],
            "timeout": call.timeout_s,
        }
        # OpenAI proper wants max_completion_tokens (it counts reasoning); many compatible servers
        # still only know max_tokens. The provider kind decides, not the model name.
        params["max_tokens" if self._compatible else "max_completion_tokens"] = call.max_tokens
        if caps.temperature and not caps.reasoning:
            params["temperature"] = call.temperature
        if caps.reasoning and call.reasoning_effort:
            params["reasoning_effort"] = call.reasoning_effort
        if schema is not None and caps.json_schema:
            # strict=False: pydantic schemas rarely meet strict mode's rules; we validate ourselves.
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema_, "strict": False},
            }
        elif schema is not None and caps.tools:
            fn = {
                "name": schema.name,
                "description": schema.description or schema.name,
                "parameters": schema.schema_,
            }
            params["tools"] = [{"type": "function", "function": fn}]
            params["tool_choice"] = {"type": "function", "function": {"name": schema.name}}
        return params

    async def complete(self, call: ProviderCall) -> Completion:
        start = time.monotonic()
        try:
            resp = await self._client.chat.completions.create(**self._params(call))
        except Exception as exc:  # classified: the gateway decides whether to retry
            raise classify_sdk_error(exc, self._sdk) from exc
        if not resp.choices:
            raise ProviderError("response has no choices", retryable=True)
        choice = resp.choices[0]
        msg = choice.message
        data = None
        for tool_call in msg.tool_calls or []:
            if tool_call.type == "function":
                try:
                    data = json.loads(tool_call.function.arguments)
                except json.JSONDecodeError:
                    # Left as text so the structured layer re-asks with the parse error.
                    return self._completion(
                        call, tool_call.function.arguments, None, choice.finish_reason, resp, start
                    )
                break
        return self._completion(
            call, msg.content or msg.refusal or "", data, choice.finish_reason, resp, start
        )

    def _completion(
        self,
        call: ProviderCall,
        text: str,
        data: dict[str, Any] | None,
        finish: str | None,
        resp: Any,
        start: float,
    ) -> Completion:
        u = resp.usage
        cached = (u.prompt_tokens_details.cached_tokens or 0) if u and u.prompt_tokens_details else 0
        return Completion(
            text=text,
            data=data if isinstance(data, dict) else None,
            stop_reason=_STOP.get(finish or "", "other"),
            usage=Usage(
                input_tokens=u.prompt_tokens if u else 0,
                output_tokens=u.completion_tokens if u else 0,
                cached_tokens=cached,
            ),
            provider=self.name,
            model=call.model.model,
            latency_s=time.monotonic() - start,
        )

    async def embed(self, call: EmbedCall) -> Embeddings:
        start = time.monotonic()
        # encoding_format="float": the SDK otherwise asks for base64, which several compatible
        # servers do not implement, and decodes it to float32.
        params: dict[str, Any] = {
            "model": call.model.model,
            "input": list(call.texts),
            "encoding_format": "float",
            "timeout": call.timeout_s,
        }
        if call.dimensions is not None:
            params["dimensions"] = call.dimensions
        try:
            resp = await self._client.embeddings.create(**params)
        except Exception as exc:  # classified: the gateway decides whether to retry
            raise classify_sdk_error(exc, self._sdk) from exc
        usage = getattr(resp, "usage", None)
        return Embeddings(
            vectors=_vectors(resp, len(call.texts)),
            usage=Usage(input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0)),
            provider=self.name,
            model=call.model.model,
            latency_s=time.monotonic() - start,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _vectors(resp: Any, expected: int) -> tuple[tuple[float, ...], ...]:
    """The response's vectors ordered by `index`, checked: one per input, same length, finite.

    The SDK builds response objects without validating them, so a body that is JSON but not an
    embeddings list gets here; it is reported as malformed (retryable, like an unparsable body)."""
    data = getattr(resp, "data", None)
    if not isinstance(data, list) or len(data) != expected:
        got = len(data) if isinstance(data, list) else type(data).__name__
        raise ProviderError(
            f"malformed embeddings response: expected {expected} vectors, got {got}", retryable=True
        )
    by_index: dict[int, tuple[float, ...]] = {}
    for item in data:
        index, vector = getattr(item, "index", None), getattr(item, "embedding", None)
        if not isinstance(index, int) or not isinstance(vector, list) or not vector:
            raise ProviderError(
                "malformed embeddings response: an item lacks an integer index or a vector list",
                retryable=True,
            )
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in vector):
            raise ProviderError(
                f"malformed embeddings response: vector {index} holds non-numbers", retryable=True
            )
        by_index[index] = tuple(float(x) for x in vector)
    if sorted(by_index) != list(range(expected)):
        raise ProviderError(
            f"malformed embeddings response: indexes {sorted(by_index)} are not 0..{expected - 1}",
            retryable=True,
        )
    if len({len(v) for v in by_index.values()}) != 1:
        raise ProviderError("malformed embeddings response: vectors of different lengths", retryable=True)
    return tuple(by_index[i] for i in range(expected))
