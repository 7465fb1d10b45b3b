"""Start-of-run probe: one short call per model in use, to learn what its endpoint can do before
any work is spent on it.

Per (provider, model) that a chat role uses: one completion of at most `PROBE_TOKENS` output
tokens (speed: output tokens over the call's wall time, prompt processing included, so a lower
bound), and, for an `openai_compatible` endpoint, the context size the server reports (llama.cpp's
`/props`, vLLM's `max_model_len` in `/v1/models`). Reported before the run, with the setting to
change: a role whose `max_tokens` cannot be written within `timeout_s` at the measured speed, a
role whose `max_tokens` leaves less than its steps' smallest prompt of the server's context
(`prompt_budget.too_small`, the check the config's context gets), and a model whose
`capabilities.context_tokens` claims more than the server holds (the gateway refuses an
over-long prompt by that number before paying for it). A probe that fails is
reported, not refused: the run's own calls will retry, fail and be accounted as usual.

One slow sample (a stall of the server) must not refuse a run: a model measured too slow for a
role is probed again, up to `PROBE_SAMPLES` times, and judged by its fastest sample. A resume of a
run that has already had answers from the model is warned, not refused, on speed.

Each probe sample is a real call, paid like any other: `ProbeResult.records` are its rows (role
`probe`) for the ledger, so `silva cost` and the dollar budget count them (docs/llm.md).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, Field

from engine.llm.config import LLMConfig, ProviderConfig
from engine.llm.ledger import CallRecord
from engine.llm.prices import ResolvedModel, resolve_model
from engine.llm.prompt_budget import PromptBudget, estimate_tokens, too_small
from engine.llm.providers.base import ProviderCall
from engine.llm.resolve import build_provider
from engine.llm.types import EMBEDDING_ROLE, Message

PROBE_TOKENS = 32
PROBE_PROMPT = "Count from 1 to 100, numbers separated by spaces, nothing else."
MIN_MEASURED = 8  # output tokens a probe must produce for its speed to be judged
PROBE_ROLE = "probe"  # the probe's calls in the ledger
MARGIN = 0.8  # suggested settings keep a fifth of the deadline spare
PROBE_SAMPLES = 3  # samples at most before a model is judged too slow: the fastest counts


class ProbeResult(BaseModel):
    provider: str
    model: str  # the entry under llm.models
    model_id: str
    ts: float = Field(default_factory=time.time)
    latency_s: float | None = None
    wall_s: float = 0.0  # the whole probe: the context query and the call
    input_tokens: int = 0  # the provider's count, or the prompt's estimate when no answer came
    output_tokens: int = 0
    cached_tokens: int = 0
    tokens_per_s: float | None = None  # None: too few tokens to measure, or the probe failed
    context_tokens: int | None = None  # as the server reports it
    context_source: str | None = None
    dollars: float = 0.0
    lost_dollars: float = 0.0  # of `dollars`: a prompt the provider read before the probe timed out
    error: str | None = None
    others: list[ProbeResult] = Field(default_factory=list)  # the slower samples, paid too
    warnings: list[str] = Field(default_factory=list)  # what would refuse a new run, on a resume

    def records(self) -> list[CallRecord]:
        """Every sample's row, this one first."""
        return [self.record(), *(o.record() for o in self.others)]

    def record(self) -> CallRecord:
        """The probe's row in the run's LLM ledger (engine/llm/ledger.py), like a gateway call's."""
        return CallRecord(
            ts=self.ts,
            role=PROBE_ROLE,
            provider=self.provider,
            model=self.model_id,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            dollars=self.dollars,
            lost_dollars=self.lost_dollars,
            latency_s=self.latency_s if self.latency_s is not None else self.wall_s,
            attempts=1,
            wall_s=self.wall_s,
            error=self.error,
        )

    def line(self) -> str:
        """One line for the terminal: what was measured, in the probe's own numbers."""
        head = f"probe {self.provider}/{self.model} ({self.model_id}): "
        if self.error is not None:
            return head + f"failed: {self.error}"
        speed = (
            f"{self.tokens_per_s:.1f} tokens/s ({self.output_tokens} tokens in {self.latency_s:.2f} s)"
            if self.tokens_per_s is not None
            else f"{self.output_tokens} tokens in {self.latency_s:.2f} s (too few to measure speed)"
        )
        context = (
            f"context {self.context_tokens} tokens ({self.context_source})"
            if self.context_tokens is not None
            else "context not reported"
        )
        samples = f" (fastest of {1 + len(self.others)} samples)" if self.others else ""
        dollars = self.dollars + sum(o.dollars for o in self.others)
        warned = "".join(f"\n  warning: {w}" for w in self.warnings)
        return head + f"{speed}{samples}; {context}; ${dollars:.6f}{warned}"


def probe_models(cfg: LLMConfig, keys: Mapping[str, str]) -> list[ProbeResult]:
    """One probe per (provider, model) a chat role uses on a non-scripted provider."""
    wanted: dict[str, ResolvedModel] = {}
    for role, rc in cfg.roles.items():
        if role != EMBEDDING_ROLE and rc.model not in wanted:
            model = resolve_model(cfg, rc.model)
            if cfg.providers[model.provider].kind != "scripted" and model.capabilities.chat:
                wanted[rc.model] = model
    if not wanted:
        return []
    return asyncio.run(_probe_all(cfg, wanted, keys))


async def _probe_all(
    cfg: LLMConfig, wanted: Mapping[str, ResolvedModel], keys: Mapping[str, str]
) -> list[ProbeResult]:
    out = []
    for model in wanted.values():
        pcfg = cfg.providers[model.provider]
        provider = build_provider(model.provider, pcfg, keys.get(model.provider))
        # The speed every role on this model needs to write its max_tokens within timeout_s.
        need = max(rc.max_tokens for rc in cfg.roles.values() if rc.model == model.name) / pcfg.timeout_s
        try:
            out.append(await _fastest(provider, model, pcfg, keys.get(model.provider), need))
        finally:
            await provider.aclose()
    return out


async def _fastest(
    provider: Any, model: ResolvedModel, pcfg: ProviderConfig, key: str | None, need: float
) -> ProbeResult:
    """Samples until one is fast enough for `need` tokens/s (or fails, or writes too few tokens
    to judge), at most `PROBE_SAMPLES`: the fastest, carrying the others."""
    samples = [await _probe(provider, model, pcfg, key)]
    while len(samples) < PROBE_SAMPLES and (samples[-1].tokens_per_s or need) < need:
        samples.append(await _probe(provider, model, pcfg, key))
    best = max(samples, key=lambda r: r.tokens_per_s or 0.0)
    best.others = [r for r in samples if r is not best]
    return best


async def _probe(provider: Any, model: ResolvedModel, pcfg: ProviderConfig, key: str | None) -> ProbeResult:
    result = ProbeResult(provider=model.provider, model=model.name, model_id=model.model)
    begun = time.monotonic()
    if pcfg.kind == "openai_compatible" and pcfg.base_url:
        result.context_tokens, result.context_source = await served_context(pcfg.base_url, model.model, key)
    call = ProviderCall(
        model=model,
        messages=(Message.user(PROBE_PROMPT),),
        role=PROBE_ROLE,
        temperature=0.0,
        max_tokens=min(PROBE_TOKENS, model.capabilities.max_output_tokens),
        timeout_s=pcfg.timeout_s,
    )
    start = time.monotonic()
    try:
        completion = await asyncio.wait_for(provider.complete(call), timeout=pcfg.timeout_s)
    except Exception as exc:  # reported, never raised: the run's own calls are retried and accounted
        result.error = str(exc) or type(exc).__name__
        result.wall_s = time.monotonic() - begun
        # As the gateway accounts a call with no answer: the prompt was sent, and one that timed
        # out was read by the provider, which may bill it (engine/llm/rows.py `Tally.lost`).
        result.input_tokens = estimate_tokens(call.messages)
        if isinstance(exc, TimeoutError) and model.price is not None:
            result.dollars = result.lost_dollars = model.price.dollars(result.input_tokens, 0, 0)
        return result
    result.latency_s = time.monotonic() - start
    result.wall_s = time.monotonic() - begun
    u = completion.usage
    result.input_tokens, result.output_tokens, result.cached_tokens = (
        u.input_tokens,
        u.output_tokens,
        u.cached_tokens,
    )
    if result.output_tokens >= MIN_MEASURED and result.latency_s > 0:
        result.tokens_per_s = result.output_tokens / result.latency_s
    if model.price is not None:
        result.dollars = model.price.dollars(u.input_tokens, u.output_tokens, u.cached_tokens)
    return result


async def served_context(base_url: str, model_id: str, key: str | None) -> tuple[int | None, str | None]:
    """The context size an OpenAI-compatible server holds for `model_id`, where it says:
    llama.cpp's `/props` (`default_generation_settings.n_ctx`, per slot), else vLLM's
    `max_model_len` in `/v1/models`. (None, None) when neither answers."""
    import httpx

    parts = urlsplit(base_url.rstrip("/"))
    root = urlunsplit(parts._replace(path=parts.path.removesuffix("/v1")))
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(timeout=5.0, headers=headers) as client:
        try:
            props = (await client.get(f"{root}/props")).json()
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx, f"{root}/props n_ctx"
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        try:
            models = (await client.get(f"{base_url.rstrip('/')}/models")).json().get("data") or []
        except (httpx.HTTPError, ValueError, AttributeError):
            return None, None
    for entry in models:
        if isinstance(entry, dict) and isinstance(entry.get("max_model_len"), int):
            if entry.get("id") == model_id or len(models) == 1:
                return entry["max_model_len"], f"{base_url.rstrip('/')}/models max_model_len"
    return None, None


def probe_problems(cfg: LLMConfig, results: list[ProbeResult], worked: Collection[str] = ()) -> list[str]:
    """What the measured numbers rule out, each with the setting to change. A model in `worked`
    (`provider/model id`: it has answered this run before) is only warned about its speed, in
    its result's `warnings`: a resume is not refused on one measurement."""
    problems: list[str] = []
    by_model = {r.model: r for r in results if r.error is None}
    for role, rc in cfg.roles.items():
        r = by_model.get(rc.model)
        if role == EMBEDDING_ROLE or r is None:
            continue
        model = resolve_model(cfg, rc.model)
        slow = _too_slow(role, rc.max_tokens, model.provider, rc.model, cfg.providers[model.provider], r)
        if slow is not None and f"{r.provider}/{r.model_id}" in worked:
            r.warnings.append(f"{slow} (not refused: this run has had answers from this model before)")
        elif slow is not None:
            problems.append(slow)
        if r.context_tokens is not None:
            served = PromptBudget(
                role=role,
                context_tokens=r.context_tokens,
                max_tokens=min(rc.max_tokens, model.capabilities.max_output_tokens),
            )
            problems += too_small({role: served}, served=r.context_source or "the server")
    for name, r in by_model.items():
        claimed = resolve_model(cfg, name).capabilities.context_tokens
        if r.context_tokens is not None and claimed > r.context_tokens:
            problems.append(
                f"llm.models.{name}: capabilities.context_tokens is {claimed}, but {r.context_source} "
                f"reports {r.context_tokens}: set llm.models.{name}.capabilities.context_tokens to "
                f"{r.context_tokens} so over-long prompts are refused before they are paid for"
            )
    return problems


def _too_slow(
    role: str, max_tokens: int, provider: str, model: str, pcfg: ProviderConfig, r: ProbeResult
) -> str | None:
    if r.tokens_per_s is None or max_tokens / r.tokens_per_s <= pcfg.timeout_s:
        return None
    need = max_tokens / r.tokens_per_s
    fit = max(1, math.floor(pcfg.timeout_s * r.tokens_per_s * MARGIN))
    samples = f" (fastest of {1 + len(r.others)} samples)" if r.others else ""
    return (
        f"llm.roles.{role}: max_tokens {max_tokens} at the {r.tokens_per_s:.1f} tokens/s "
        f"measured on {provider}/{model}{samples} takes about {need:.0f} s, more than "
        f"llm.providers.{provider}.timeout_s ({pcfg.timeout_s:g} s): lower "
        f"llm.roles.{role}.max_tokens to at most {fit}, or raise "
        f"llm.providers.{provider}.timeout_s to at least {math.ceil(need / MARGIN)}"
    )
