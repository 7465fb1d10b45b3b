"""Silva's LLM layer: one client (`LLM`), one gateway (keys, limits, retries, budget, cache,
ledger), providers for Anthropic, OpenAI(-compatible) and scripted answers.

    validate_llm_config(cfg, os.environ)           # at start, before any work
    keys = take_api_keys(cfg, os.environ)          # before ray.init(): workers never see keys
    llm = build_gateway(cfg, run_dir, dollars, keys).client()      # in-process
    llm = actors.gateway.start_gateway_actor(cfg, run_dir, dollars, keys=keys)   # on Ray
    plan = llm.complete(messages, role="code", output_type=Plan, node_id=...)
    vectors = llm.embed(texts)                     # role "embedding": an embedding model
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.llm.client import LLM, Transport
from engine.llm.config import (
    Capabilities,
    LLMConfig,
    ModelSpec,
    Price,
    ProviderConfig,
    RoleConfig,
    ScriptRule,
)
from engine.llm.errors import (
    BudgetExceeded,
    CacheMiss,
    LLMCallError,
    LLMConfigError,
    LLMError,
    StructuredOutputError,
)
from engine.llm.gateway import Gateway
from engine.llm.ledger import LEDGER_FILE, CallRecord, render_summary, summarize
from engine.llm.providers.base import Provider
from engine.llm.structured import FinalAnswer, extract_code, extract_code_blocks, extract_json
from engine.llm.types import (
    EMBEDDING_ROLE,
    Completion,
    Embeddings,
    EmbedRequest,
    ImagePart,
    LLMRequest,
    Message,
    TextPart,
    Usage,
)
from engine.llm.validate import resolve_keys, take_api_keys, validate_llm_config


def build_gateway(
    cfg: LLMConfig,
    run_dir: Path,
    dollars: float | None,
    keys: Mapping[str, str],
    *,
    providers: Mapping[str, Provider] | None = None,
) -> Gateway:
    """An in-process gateway. `keys`: provider name -> key (from `take_api_keys`/`resolve_keys`);
    `providers` replaces configured providers by name (e.g. a ScriptedProvider with callables)."""
    return Gateway(cfg, run_dir, dollars=dollars, keys=keys, providers=providers)


__all__ = [
    "LLM",
    "Transport",
    "Gateway",
    "build_gateway",
    "validate_llm_config",
    "resolve_keys",
    "take_api_keys",
    "LLMConfig",
    "ProviderConfig",
    "ModelSpec",
    "RoleConfig",
    "Capabilities",
    "Price",
    "ScriptRule",
    "Message",
    "TextPart",
    "ImagePart",
    "Completion",
    "Usage",
    "LLMRequest",
    "Provider",
    "EMBEDDING_ROLE",
    "EmbedRequest",
    "Embeddings",
    "LLMError",
    "LLMConfigError",
    "BudgetExceeded",
    "LLMCallError",
    "StructuredOutputError",
    "FinalAnswer",
    "CacheMiss",
    "CallRecord",
    "LEDGER_FILE",
    "summarize",
    "render_summary",
    "extract_code",
    "extract_code_blocks",
    "extract_json",
]
