"""The `llm:` section of a run config: providers, models with capabilities and prices, roles.

Behaviour is decided by the capability flags of a model entry (or of the default table entry
for its exact model id), never by looking at substrings of model names.
Cross-references (role -> model -> provider), keys, prices and endpoints are checked by
`engine.llm.validate.validate_llm_config`, which names the entry at fault.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ProviderKind = Literal["anthropic", "openai", "openai_compatible", "scripted"]
# Kinds with an embeddings endpoint. Anthropic has none (it points users to third parties).
EMBEDDING_KINDS: tuple[ProviderKind, ...] = ("openai", "openai_compatible", "scripted")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptRule(_Strict):
    """One rule of a scripted provider: the first rule whose conditions all hold answers.

    From YAML `respond` is text or a mapping (answered as JSON); from Python it may also be a
    callable taking the request's messages and returning text.
    """

    role: str | None = None
    contains: str | None = Field(None, description="substring of the last user message")
    pattern: str | None = Field(None, description="regex searched in the last user message")
    respond: str | dict[str, Any] | Callable[..., str]


class HedgeConfig(_Strict):
    """Hedged requests (the tail at scale), off unless a provider sets `hedge:`: a call still
    unanswered at this provider, model and role's `quantile` latency (its model's, over all roles,
    while the role has too few calls) is sent once more; the first answer wins, the other is
    cancelled. The second copies' spend, counted at its worst case before a copy is sent, stays
    within `max_extra_fraction` of the run's LLM spend so far (docs/llm.md, Hedged requests)."""

    quantile: float = Field(
        0.9, gt=0, lt=1, description="hedge once a call outlasts this share of earlier calls"
    )
    min_samples: int = Field(
        20, ge=1, description="answered calls needed first: of the role, else of its model in every role"
    )
    min_delay_s: float = Field(2.0, ge=0, description="never hedge a call sooner than this")
    at_once_when_blocking: bool = Field(
        False,
        description="send a blocking call (one a decision waits for: a stage's selection, the judgement "
        "of a node that could be its best) twice at once",
    )
    max_extra_fraction: float | None = Field(
        0.05,
        ge=0,
        description="second copies may cost at most this share of the run's LLM spend so far (a free "
        "model's copies cost nothing and always fit); null: no cap",
    )


class ProviderConfig(_Strict):
    kind: ProviderKind
    base_url: str | None = Field(None, description="endpoint; required for openai_compatible")
    api_key_env: str | None = Field(None, description="NAME of the env var holding the key, never the key")
    rpm: int | None = Field(None, gt=0, description="requests per minute")
    tpm: int | None = Field(None, gt=0, description="tokens per minute (input estimate + max_tokens)")
    max_concurrency: int = Field(8, gt=0)
    timeout_s: float = Field(120.0, gt=0, description="per HTTP call")
    max_retries: int = Field(4, ge=0, description="retries of 429/5xx/connection errors/timeouts")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    hedge: HedgeConfig | None = Field(
        None, description="hedged requests; null (the default): never send a call twice"
    )
    rules: list[ScriptRule] = Field(default_factory=list, description="scripted provider only")
    default_response: str = Field("", description="scripted provider: answer when no rule matches")


class Capabilities(_Strict):
    chat: bool = True  # answers chat completions (false for embedding-only models)
    embeddings: bool = False  # returns embedding vectors (the `embedding` role needs it)
    vision: bool = False
    tools: bool = False  # forced tool/function call usable for structured output
    json_schema: bool = False  # native JSON-schema constrained output
    reasoning: bool = False  # takes an effort setting; token limit counts hidden reasoning
    temperature: bool = True  # accepts a sampling temperature
    context_tokens: int = Field(128_000, gt=0)  # for embedding models: the limit per input text
    max_output_tokens: int = Field(8_192, gt=0)


class Price(_Strict):
    """USD per million tokens. `cached_input` defaults to `input` (no discount known)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)
    free: bool = Field(
        False,
        description="says a zero price is meant: a hosted provider's model priced 0 is refused without it",
    )

    def dollars(self, input_tokens: int, output_tokens: int, cached_tokens: int) -> float:
        cached_rate = self.input if self.cached_input is None else self.cached_input
        uncached = max(0, input_tokens - cached_tokens)
        return (uncached * self.input + cached_tokens * cached_rate + output_tokens * self.output) / 1e6


class ModelSpec(_Strict):
    provider: str
    model: str = Field(description="the provider's model id")
    capabilities: Capabilities | None = Field(None, description="default: the table entry for this id")
    price: Price | None = Field(None, description="default: the table entry for this id")


class RoleConfig(_Strict):
    model: str = Field(description="a key of `models`")
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(4096, gt=0)
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    dimensions: int | None = Field(
        None,
        gt=0,
        description="embedding role only: vector length asked of models that can shorten (text-embedding-3)",
    )


class CacheConfig(_Strict):
    mode: Literal["read_write", "replay", "off"] = Field(
        "read_write", description="replay: answer only from the cache; a miss is an error"
    )
    dir: Path | None = Field(None, description="default: <run_dir>/llm_cache")


class LLMConfig(_Strict):
    providers: dict[str, ProviderConfig]
    models: dict[str, ModelSpec]
    roles: dict[str, RoleConfig]
    cache: CacheConfig = Field(default_factory=CacheConfig)
    max_reasks: int = Field(2, ge=0, description="re-asks after an answer fails validation")
    probe: bool = Field(
        True,
        description="at start, one short call per model in use: its speed and served context are checked "
        "against the roles' max_tokens and timeout_s (engine/llm/probe.py)",
    )
