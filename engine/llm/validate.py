"""Start-of-run checks: every problem an LLM config can have is reported before work is spent.

Checked: roles name known roles and configured models; models name configured providers and
have a price; token limits fit the model; the vision role can see; the embedding role maps to a
model that can embed on a provider with an embeddings API (never Anthropic), and the other roles
to chat models; providers that need a key have it in the environment; every endpoint in use
accepts a TCP connection; each role's context holds the smallest prompt of its steps
(engine/llm/prompt_budget.py); then the start-of-run probe (engine/llm/probe.py): a role that cannot
finish within its timeout at the measured speed, or that the served context cannot hold.
"""

from __future__ import annotations

import socket
from collections.abc import Collection, Mapping, MutableMapping
from urllib.parse import urlsplit

from engine.llm.config import EMBEDDING_KINDS, LLMConfig, ProviderConfig, RoleConfig
from engine.llm.errors import LLMConfigError
from engine.llm.prices import DEFAULT_MODELS, resolve_model
from engine.llm.probe import ProbeResult, probe_models, probe_problems
from engine.llm.prompt_budget import budgets, too_small
from engine.llm.types import EMBEDDING_ROLE, ROLES

DEFAULT_ENDPOINTS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
KEYED_KINDS = ("anthropic", "openai")


def _role_problems(cfg: LLMConfig) -> list[str]:
    """Roles that are unknown or name an undefined model."""
    problems: list[str] = []
    for role, rc in cfg.roles.items():
        if role not in ROLES:
            problems.append(f"llm.roles.{role}: unknown role; the roles are {', '.join(ROLES)}")
        if rc.model not in cfg.models:
            problems.append(
                f"llm.roles.{role}: model {rc.model!r} is not defined under llm.models "
                f"(defined: {', '.join(sorted(cfg.models)) or 'none'})"
            )
    return problems


def _model_problems(cfg: LLMConfig) -> list[str]:
    """Models on an undefined provider or without a known price."""
    problems: list[str] = []
    for name, spec in cfg.models.items():
        if spec.provider not in cfg.providers:
            problems.append(
                f"llm.models.{name}: provider {spec.provider!r} is not defined under llm.providers"
            )
            continue
        model = resolve_model(cfg, name)
        if model.price is None:
            problems.append(
                f"llm.models.{name}: no price known for model id {spec.model!r}; set "
                "price: {input: USD/Mtok, output: USD/Mtok} (0 for a free local model)"
            )
    return problems


def _capability_problems(cfg: LLMConfig, role: str, rc: RoleConfig) -> list[str]:
    """What a role asks of its model that the model cannot do."""
    problems: list[str] = []
    model = resolve_model(cfg, rc.model)
    caps = model.capabilities
    if role == EMBEDDING_ROLE:
        kind = cfg.providers[model.provider].kind
        if kind not in EMBEDDING_KINDS:
            problems.append(
                f"llm.roles.{role}: model {rc.model!r} is on provider {model.provider!r} of kind "
                f"{kind}, which has no embeddings API (Anthropic offers none); map the role to an "
                "embedding model on an openai or openai_compatible provider (e.g. "
                "text-embedding-3-small), or remove it to use the offline TF-IDF fallback"
            )
        elif not caps.embeddings:
            problems.append(
                f"llm.roles.{role}: model {rc.model!r} ({model.model}) cannot embed "
                "(capabilities.embeddings is false); map the role to an embedding model such as "
                "text-embedding-3-small, or set capabilities.embeddings: true on a model that "
                "serves embeddings"
            )
        return problems  # temperature and max_tokens mean nothing to an embeddings call
    if rc.dimensions is not None:
        problems.append(f"llm.roles.{role}: dimensions applies to the {EMBEDDING_ROLE} role only")
    if not caps.chat:
        problems.append(
            f"llm.roles.{role}: model {rc.model!r} ({model.model}) is an embedding model "
            "(capabilities.chat is false); map the role to a chat model"
        )
    if rc.max_tokens > caps.max_output_tokens:
        problems.append(
            f"llm.roles.{role}: max_tokens {rc.max_tokens} exceeds model {rc.model!r}'s "
            f"output limit of {caps.max_output_tokens}"
        )
    if role == "vision" and not caps.vision:
        problems.append(
            f"llm.roles.vision: model {rc.model!r} has no vision capability; pick a model "
            "with capabilities.vision: true"
        )
    return problems


def _provider_problems(cfg: LLMConfig, env: Mapping[str, str]) -> list[str]:
    """Providers in use without their key, or an openai_compatible one without base_url."""
    problems: list[str] = []
    for name, pcfg in _used_providers(cfg).items():
        if pcfg.kind in KEYED_KINDS and not pcfg.api_key_env:
            problems.append(
                f"llm.providers.{name}: set api_key_env to the NAME of the environment variable "
                "holding its API key"
            )
        elif pcfg.api_key_env and not env.get(pcfg.api_key_env):
            problems.append(
                f"llm.providers.{name}: environment variable {pcfg.api_key_env} (its API key) "
                "is not set; export it in the shell that starts the run"
            )
        if pcfg.kind == "openai_compatible" and not pcfg.base_url:
            problems.append(f"llm.providers.{name}: an openai_compatible provider needs base_url")
    return problems


def _problems(cfg: LLMConfig, env: Mapping[str, str]) -> list[str]:
    problems = _role_problems(cfg) + _model_problems(cfg)
    for role, rc in cfg.roles.items():
        if rc.model in cfg.models and cfg.models[rc.model].provider in cfg.providers:
            problems += _capability_problems(cfg, role, rc)
    return problems + _provider_problems(cfg, env) + _unpaid(cfg)


def _unpaid(cfg: LLMConfig) -> list[str]:
    """A zero price on a hosted provider for a model the price table knows: what an edit of a
    local example leaves behind, and a dollar budget that could never stop the run."""
    problems = []
    for name, spec in cfg.models.items():
        pcfg, table, price = cfg.providers.get(spec.provider), DEFAULT_MODELS.get(spec.model), spec.price
        if pcfg is None or table is None or price is None or pcfg.kind not in KEYED_KINDS or price.free:
            continue
        if price.input == 0 and price.output == 0:
            listed = table[1]
            problems.append(
                f"llm.models.{name}: price 0 for {spec.model} on {pcfg.kind}, which lists "
                f"${listed.input:g}/${listed.output:g} per million tokens in/out: remove its price "
                "to use the table's, or set price.free: true if this endpoint does not bill"
            )
    return problems


def _used_providers(cfg: LLMConfig) -> dict[str, ProviderConfig]:
    used = {cfg.models[rc.model].provider for rc in cfg.roles.values() if rc.model in cfg.models}
    return {name: cfg.providers[name] for name in sorted(used) if name in cfg.providers}


def _unreachable(name: str, pcfg: ProviderConfig, timeout_s: float) -> str | None:
    url = pcfg.base_url or DEFAULT_ENDPOINTS.get(pcfg.kind)
    if url is None:
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return f"llm.providers.{name}: base_url {url!r} has no host"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return (
            f"llm.providers.{name}: endpoint {url} is unreachable ({exc}); start the server or fix base_url"
        )


def validate_llm_config(
    cfg: LLMConfig,
    env: Mapping[str, str],
    *,
    check_endpoints: bool = True,
    connect_timeout_s: float = 3.0,
    worked: Collection[str] = (),
) -> list[ProbeResult]:
    """Raise `LLMConfigError` listing every problem, or return what the start-of-run probe
    measured (engine/llm/probe.py; nothing when endpoints are not checked or `llm.probe` is off).
    `worked`: models (`provider/model id`) that have answered this run before, on a resume: the
    probe warns about their speed instead of refusing."""
    problems = _problems(cfg, env)
    if not problems:
        problems = too_small(budgets(cfg))
    results: list[ProbeResult] = []
    if check_endpoints and not problems:
        for name, pcfg in _used_providers(cfg).items():
            if pcfg.kind != "scripted" and (problem := _unreachable(name, pcfg, connect_timeout_s)):
                problems.append(problem)
        if cfg.probe and not problems:
            results = probe_models(cfg, resolve_keys(cfg, env))
            problems = probe_problems(cfg, results, worked)
    if problems:
        raise LLMConfigError("LLM config is not usable:\n  - " + "\n  - ".join(problems))
    return results


def resolve_keys(cfg: LLMConfig, env: Mapping[str, str]) -> dict[str, str]:
    """provider name -> API key value, read from the environment variables the config names."""
    return {
        name: env[p.api_key_env]
        for name, p in cfg.providers.items()
        if p.api_key_env and env.get(p.api_key_env)
    }


def take_api_keys(cfg: LLMConfig, environ: MutableMapping[str, str]) -> dict[str, str]:
    """Like `resolve_keys`, and remove the variables from `environ`.

    Call it on `os.environ` before `ray.init()`: Ray workers inherit the environment of the
    process that starts the cluster, so keys removed first never reach a worker or a sandbox.
    """
    keys = resolve_keys(cfg, environ)
    for p in cfg.providers.values():
        if p.api_key_env:
            environ.pop(p.api_key_env, None)
    return keys
