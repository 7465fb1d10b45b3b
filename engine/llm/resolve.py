"""What a request becomes before anything is sent: its role's model and provider, the provider
object itself, and the refusals found before paying (capabilities, context, empty texts)."""

from __future__ import annotations

from collections.abc import Callable

from engine.llm.config import EMBEDDING_KINDS, LLMConfig, Price, ProviderConfig
from engine.llm.errors import LLMCallError, LLMConfigError
from engine.llm.prices import resolve_model
from engine.llm.prompt_budget import PROSE_CHARS_PER_TOKEN, estimate_tokens
from engine.llm.providers.base import EmbedCall, EmbeddingProvider, Provider, ProviderCall
from engine.llm.types import EmbedRequest, LLMRequest


def build_provider(name: str, pcfg: ProviderConfig, key: str | None) -> Provider:
    """Construct a provider; its SDK is imported here, only when that kind is configured."""
    if pcfg.kind == "anthropic":
        from engine.llm.providers.anthropic import AnthropicProvider

        return AnthropicProvider(name, api_key=key or "", base_url=pcfg.base_url)
    if pcfg.kind in ("openai", "openai_compatible"):
        from engine.llm.providers.openai import OpenAIProvider

        return OpenAIProvider(
            name, api_key=key, base_url=pcfg.base_url, compatible=pcfg.kind == "openai_compatible"
        )
    from engine.llm.providers.scripted import ScriptedProvider

    return ScriptedProvider(name, rules=pcfg.rules, default=pcfg.default_response)


def resolve(cfg: LLMConfig, request: LLMRequest) -> tuple[ProviderCall, ProviderConfig]:
    """The provider call for a completion of `request.role`, from the role's model and provider."""
    role = cfg.roles.get(request.role)
    if role is None:
        raise LLMConfigError(
            f"no model configured for LLM role {request.role!r}; add it under llm.roles "
            f"(configured: {', '.join(sorted(cfg.roles)) or 'none'})"
        )
    model = resolve_model(cfg, role.model)
    caps = model.capabilities
    if not caps.chat:
        raise LLMConfigError(chat_caps_problem(request.role, role.model))
    pcfg = cfg.providers[model.provider]
    call = ProviderCall(
        model=model,
        messages=request.messages,
        role=request.role,
        temperature=role.temperature,
        max_tokens=min(role.max_tokens, caps.max_output_tokens),
        timeout_s=pcfg.timeout_s,
        reasoning_effort=role.reasoning_effort,
        output_schema=request.output_schema,
        context=request.context,
    )
    return call, pcfg


def refusal(cfg: LLMConfig, request: LLMRequest, call: ProviderCall) -> str | None:
    """Why the call cannot be answered by its model, found before anything is sent or paid:
    images for a model without vision, a prompt the model's context cannot hold."""
    role, caps = cfg.roles[request.role], call.model.capabilities
    n_images = sum(len(m.images) for m in request.messages)
    if n_images and not caps.vision:
        return (
            f"role {request.role!r} sent {n_images} image(s) but model {role.model!r} has no "
            "vision capability; map the role to a vision model"
        )
    prompt_tokens = estimate_tokens(request.messages, PROSE_CHARS_PER_TOKEN)
    if prompt_tokens + call.max_tokens > caps.context_tokens:
        return (
            f"role {request.role!r}: prompt of ~{prompt_tokens} tokens plus max_tokens "
            f"{call.max_tokens} exceeds the {caps.context_tokens}-token context of {role.model!r}"
        )
    return None


def resolve_embed(
    cfg: LLMConfig, request: EmbedRequest, provider: Callable[[str], Provider]
) -> tuple[EmbedCall, ProviderConfig, Price]:
    """The provider call for an embeddings request; `provider`: the gateway's provider by name."""
    role = cfg.roles.get(request.role)
    if role is None:
        raise LLMConfigError(
            f"no model configured for LLM role {request.role!r}; add it under llm.roles, "
            "mapped to an embedding model (e.g. text-embedding-3-small)"
        )
    model = resolve_model(cfg, role.model)
    pcfg = cfg.providers[model.provider]
    if pcfg.kind not in EMBEDDING_KINDS:
        raise LLMConfigError(embedding_kind_problem(request.role, role.model, model.provider, pcfg.kind))
    if not model.capabilities.embeddings:
        raise LLMConfigError(embedding_caps_problem(request.role, role.model, model.model))
    if model.price is None:
        raise LLMConfigError(
            f"model {model.name!r} ({model.model}) has no price; "
            "set llm.models.<name>.price (input USD per million tokens)"
        )
    for i, text in enumerate(request.texts):
        if not text.strip():
            raise LLMCallError(
                f"role {request.role!r}: text {i} is empty; embeddings APIs refuse empty input"
            )
        if (tokens := int(len(text) / PROSE_CHARS_PER_TOKEN)) > model.capabilities.context_tokens:
            raise LLMCallError(
                f"role {request.role!r}: text {i} of ~{tokens} tokens exceeds the "
                f"{model.capabilities.context_tokens}-token input limit of {role.model!r}"
            )
    if not isinstance(provider(model.provider), EmbeddingProvider):
        # A provider passed in from Python (build_gateway(providers=...)) that cannot embed.
        raise LLMConfigError(embedding_kind_problem(request.role, role.model, model.provider, pcfg.kind))
    call = EmbedCall(
        model=model,
        texts=request.texts,
        role=request.role,
        timeout_s=pcfg.timeout_s,
        dimensions=role.dimensions,
    )
    return call, pcfg, model.price


def chat_caps_problem(role: str, model: str) -> str:
    return (
        f"role {role!r} maps to model {model!r}, an embedding model (capabilities.chat is false); "
        "map it to a chat model"
    )


def embedding_kind_problem(role: str, model: str, provider: str, kind: str) -> str:
    return (
        f"role {role!r} maps to model {model!r} on provider {provider!r} of kind {kind}, which has no "
        "embeddings API (Anthropic offers none); map it to an embedding model on an openai or "
        "openai_compatible provider (e.g. text-embedding-3-small), or leave the role out to use the "
        "offline TF-IDF fallback"
    )


def embedding_caps_problem(role: str, model: str, model_id: str) -> str:
    return (
        f"role {role!r} maps to model {model!r} ({model_id}), which cannot embed "
        "(capabilities.embeddings is false); map it to an embedding model such as text-embedding-3-small, "
        "or set capabilities.embeddings: true on a model that serves embeddings"
    )
