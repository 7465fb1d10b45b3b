"""The LLM layer's vocabulary: messages (text and PNG parts), requests, completions, usage.

Pydantic models because every one of them crosses a boundary: a Ray call to the gateway actor,
the on-disk response cache, or the ledger. Bytes serialise as base64 so an image survives JSON.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ROLES: tuple[str, ...] = (
    "code",
    "feedback",
    "selection",
    "vision",
    "writeup",
    "review",
    "ideation",
    "embedding",
)
EMBEDDING_ROLE = "embedding"  # the role `LLM.embed` asks by default; it maps to an embedding model

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ImagePart(_Frozen):
    """A PNG image (a plot to critique). Only PNG: it is what Silva's plotting produces."""

    type: Literal["image"] = "image"
    png: bytes

    def b64(self) -> str:
        return base64.b64encode(self.png).decode("ascii")


class Message(_Frozen):
    role: Literal["system", "user", "assistant"]
    parts: tuple[TextPart | ImagePart, ...] = Field(min_length=1)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str, images: list[bytes] | tuple[bytes, ...] = ()) -> Message:
        for png in images:
            if not png.startswith(PNG_MAGIC):
                raise ValueError("Message.user(images=...) takes PNG bytes; got something that is not a PNG")
        parts: list[TextPart | ImagePart] = [TextPart(text=text)]
        parts.extend(ImagePart(png=png) for png in images)
        return cls(role="user", parts=tuple(parts))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls(role="assistant", parts=(TextPart(text=text),))

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        return [p for p in self.parts if isinstance(p, ImagePart)]


class Usage(_Frozen):
    """Tokens of one call. `input_tokens` includes `cached_tokens` (billed at the cached price)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


StopReason = Literal["end", "max_tokens", "tool_use", "refusal", "other"]


class Completion(_Frozen):
    text: str
    # Arguments of a forced tool call, when structured output came back that way.
    data: dict[str, Any] | None = None
    stop_reason: StopReason = "end"
    usage: Usage = Usage()
    provider: str = ""
    model: str = ""
    dollars: float = 0.0
    cache_hit: bool = False
    latency_s: float = 0.0
    retries: int = 0

    @property
    def truncated(self) -> bool:
        return self.stop_reason == "max_tokens"


class OutputSchema(_Frozen):
    """A JSON schema the answer must satisfy, sent to the provider in its own structured form."""

    name: str
    schema_: dict[str, Any] = Field(alias="schema")
    description: str = ""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class LLMRequest(_Frozen):
    """What a worker sends to the gateway. No model names or keys: the gateway resolves the role."""

    messages: tuple[Message, ...] = Field(min_length=1)
    role: str
    output_schema: OutputSchema | None = None
    node_id: str | None = None
    stage: str | None = None
    idea: str | None = None
    # For the ledger only: the cache identity is node + step + content, so a resumed attempt
    # finds what an earlier attempt of the same node paid for (engine/llm/cache.py).
    attempt: int = 0
    # A decision waits for this answer (a stage's selection, the judgement of a node that could be
    # its best): the gateway sends it twice at once (HedgeConfig.at_once_when_blocking). Not part
    # of the cache identity.
    blocking: bool = False
    # What the call is, as data (operator, step, node...): read by scripted providers, which answer
    # by it; no real provider sends it, so no test seam reaches a paid model (docs/llm.md). Part of
    # the cache identity, as the messages are: two steps may send the same text.
    context: dict[str, str] = Field(default_factory=dict)
    # A structured call's asks share a `chain` id; `reask` counts them (0: the first ask). For the
    # ledger only, so `silva cost` tells the answers that did not validate from the one that did.
    chain: str | None = None
    reask: int = 0


class EmbedRequest(_Frozen):
    """Texts to embed, for a role mapped to a model with the `embeddings` capability."""

    texts: tuple[str, ...] = Field(min_length=1)
    role: str = EMBEDDING_ROLE
    node_id: str | None = None
    stage: str | None = None
    idea: str | None = None


class Embeddings(_Frozen):
    """One vector per text, in the order of the request's texts."""

    vectors: tuple[tuple[float, ...], ...]
    usage: Usage = Usage()  # input tokens only: an embedding call has no output tokens
    provider: str = ""
    model: str = ""
    dollars: float = 0.0
    cache_hit: bool = False  # every vector came from the cache
    latency_s: float = 0.0
    retries: int = 0


class CachedVector(_Frozen):
    """One text's vector in the response cache, with its share of the tokens paid for it."""

    vector: tuple[float, ...]
    tokens: int = 0
