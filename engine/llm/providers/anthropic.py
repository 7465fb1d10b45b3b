"""Anthropic Messages API through the `anthropic` SDK (imported when the provider is built)."""

from __future__ import annotations

import time
from typing import Any

from engine.llm.providers.base import (
    ProviderCall,
    classify_sdk_error,
    split_system,
    with_schema_instruction,
)
from engine.llm.types import Completion, ImagePart, Message, StopReason, Usage

_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "tool_use": "tool_use",
    "refusal": "refusal",
}


def _content(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            blocks.append(
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": part.b64()}}
            )
        else:
            blocks.append({"type": "text", "text": part.text})
    return blocks


class AnthropicProvider:
    def __init__(self, name: str, *, api_key: str, base_url: str | None = None) -> None:
        import anthropic

        self.name = name
        self._sdk = anthropic
        # max_retries=0: the gateway owns retries, so rate limits and budgets see every attempt.
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0)

    def _params(self, call: ProviderCall) -> dict[str, Any]:
        caps = call.model.capabilities
        messages = call.messages
        schema = call.output_schema
        if schema is not None and not (caps.json_schema or caps.tools):
            messages = with_schema_instruction(messages, schema)
        system, turns = split_system(messages)
        params: dict[str, Any] = {
            "model": call.model.model,
            "max_tokens": call.max_tokens,
            "messages": [{"role": m.role, "content": _content(m)} for m in turns],
            "timeout": call.timeout_s,
        }
        if system:
            params["system"] = system
        output_config: dict[str, Any] = {}
        if caps.reasoning and call.reasoning_effort:
            output_config["effort"] = call.reasoning_effort
        if schema is not None and caps.json_schema:
            output_config["format"] = {
                "type": "json_schema",
                "schema": self._sdk.transform_schema(schema.schema_),
            }
        elif schema is not None and caps.tools:
            tool = {
                "name": schema.name,
                "description": schema.description or schema.name,
                "input_schema": schema.schema_,
            }
            params["tools"] = [tool]
            params["tool_choice"] = {"type": "tool", "name": schema.name}
        if output_config:
            params["output_config"] = output_config
        if caps.temperature and not caps.reasoning:
            # The current SDK's create() has no temperature argument; the API takes it in the body.
            params["extra_body"] = {"temperature": call.temperature}
        return params

    async def complete(self, call: ProviderCall) -> Completion:
        start = time.monotonic()
        try:
            msg = await self._client.messages.create(**self._params(call))
        except Exception as exc:  # classified: the gateway decides whether to retry
            raise classify_sdk_error(exc, self._sdk) from exc
        text = "".join(b.text for b in msg.content if b.type == "text")
        data = next((dict(b.input) for b in msg.content if b.type == "tool_use"), None)
        u = msg.usage
        cached = u.cache_read_input_tokens or 0
        total_in = u.input_tokens + cached + (u.cache_creation_input_tokens or 0)
        return Completion(
            text=text,
            data=data,
            stop_reason=_STOP.get(msg.stop_reason or "", "other"),
            usage=Usage(input_tokens=total_in, output_tokens=u.output_tokens, cached_tokens=cached),
            provider=self.name,
            model=call.model.model,
            latency_s=time.monotonic() - start,
        )

    async def aclose(self) -> None:
        await self._client.close()
