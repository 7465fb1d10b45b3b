"""Defaults for a few well-known models: capabilities and list prices (USD per million tokens).

Looked up by exact model id only. A config entry overrides any field here, and a model missing
from this table must be priced in the config (validation says so). Prices change: check the
providers' pricing pages and override in config when they do.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.llm.config import Capabilities, LLMConfig, Price

_VISION_TOOLS = dict(vision=True, tools=True)
# Embedding models: no chat, one input text may hold up to 8192 tokens, billed on input only.
_EMBEDDING = Capabilities(chat=False, embeddings=True, temperature=False, context_tokens=8_192)

DEFAULT_MODELS: dict[str, tuple[Capabilities, Price]] = {
    "claude-opus-4-5": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=200_000, max_output_tokens=64_000),
        Price(input=5.0, output=25.0, cached_input=0.5),
    ),
    "claude-sonnet-4-5": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=200_000, max_output_tokens=64_000),
        Price(input=3.0, output=15.0, cached_input=0.3),
    ),
    "claude-haiku-4-5": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=200_000, max_output_tokens=64_000),
        Price(input=1.0, output=5.0, cached_input=0.1),
    ),
    "gpt-4o": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=128_000, max_output_tokens=16_384),
        Price(input=2.5, output=10.0, cached_input=1.25),
    ),
    "gpt-4o-mini": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=128_000, max_output_tokens=16_384),
        Price(input=0.15, output=0.6, cached_input=0.075),
    ),
    "gpt-4.1": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=1_047_576, max_output_tokens=32_768),
        Price(input=2.0, output=8.0, cached_input=0.5),
    ),
    "gpt-4.1-mini": (
        Capabilities(**_VISION_TOOLS, json_schema=True, context_tokens=1_047_576, max_output_tokens=32_768),
        Price(input=0.4, output=1.6, cached_input=0.1),
    ),
    "gpt-5": (
        Capabilities(
            **_VISION_TOOLS,
            json_schema=True,
            reasoning=True,
            temperature=False,
            context_tokens=400_000,
            max_output_tokens=128_000,
        ),
        Price(input=1.25, output=10.0, cached_input=0.125),
    ),
    "o4-mini": (
        Capabilities(
            **_VISION_TOOLS,
            json_schema=True,
            reasoning=True,
            temperature=False,
            context_tokens=200_000,
            max_output_tokens=100_000,
        ),
        Price(input=1.1, output=4.4, cached_input=0.275),
    ),
    "text-embedding-3-small": (_EMBEDDING, Price(input=0.02, output=0.0)),
    "text-embedding-3-large": (_EMBEDDING, Price(input=0.13, output=0.0)),
    "text-embedding-ada-002": (_EMBEDDING, Price(input=0.10, output=0.0)),
}


@dataclass(frozen=True)
class ResolvedModel:
    """A role's model with the default table applied: what the gateway actually uses."""

    name: str
    provider: str
    model: str
    capabilities: Capabilities
    price: Price | None


def resolve_model(cfg: LLMConfig, name: str) -> ResolvedModel:
    spec = cfg.models[name]
    table = DEFAULT_MODELS.get(spec.model)
    caps = spec.capabilities or (table[0] if table else Capabilities())
    price = spec.price or (table[1] if table else None)
    if price is None and cfg.providers[spec.provider].kind == "scripted":
        price = Price(input=0.0, output=0.0)
    return ResolvedModel(name=name, provider=spec.provider, model=spec.model, capabilities=caps, price=price)
