"""The gateway's embeddings path: texts the cache holds cost nothing (one cache-hit ledger row
covers them); the others are sent in batches, each admitted by the budget, rate-limited, retried,
priced and recorded like a completion, and each text cached on its own."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

from engine.llm.cache import embedding_key
from engine.llm.config import Price, ProviderConfig
from engine.llm.errors import BudgetExceeded, CacheMiss
from engine.llm.prompt_budget import CHARS_PER_TOKEN
from engine.llm.providers.base import EmbedCall, EmbeddingProvider
from engine.llm.resolve import resolve_embed
from engine.llm.retry import with_retries
from engine.llm.rows import Row, Tally
from engine.llm.types import CachedVector, Embeddings, EmbedRequest, Usage

if TYPE_CHECKING:
    from engine.llm.gateway import Gateway

# One embeddings request holds at most this many texts and estimated tokens: below OpenAI's
# limits (2048 inputs, 300k tokens summed) with room for the estimate's error.
EMBED_BATCH_TEXTS = 256
EMBED_BATCH_TOKENS = 150_000


async def embed_texts(gw: Gateway, request: EmbedRequest) -> Embeddings:
    """Vectors for `request.texts`, in order. Texts the cache holds cost nothing (one cache-hit
    ledger record covers them); the others are sent in batches, each admitted by the budget,
    rate-limited, retried, priced and recorded like a completion."""
    call, pcfg, price = resolve_embed(gw.cfg, request, gw.provider)
    keys = [embedding_key(call.model, call.dimensions, t) for t in request.texts]
    found: dict[int, CachedVector] = {}
    for i, key in enumerate(keys):
        if (entry := gw.cache.get_vector(key)) is not None:
            found[i] = entry
    missing = [i for i in range(len(keys)) if i not in found]
    batch_key = _combined(keys)
    if found:
        gw.record(
            request,
            call,
            Row(input_tokens=sum(e.tokens for e in found.values()), cache_hit=True),
            key=batch_key if not missing else _combined([keys[i] for i in found]),
        )
    if missing and gw.cache.mode == "replay":
        gw.record(request, call, Row(), key=batch_key, error="cache miss in replay mode", cause="refused")
        raise CacheMiss(
            f"replay: {len(missing)} text(s) of a {request.role!r} embeddings call (node "
            f"{request.node_id}) are not in the cache; the replayed run embedded something new"
        )
    same: dict[str, list[int]] = {}  # a text repeated in one request is sent once
    for i in missing:
        same.setdefault(keys[i], []).append(i)
    unique = [idxs[0] for idxs in same.values()]
    usage, dollars, retries, latency = 0, 0.0, 0, 0.0
    for batch in _batches(unique, [len(request.texts[i]) / CHARS_PER_TOKEN for i in unique]):
        texts = tuple(request.texts[i] for i in batch)
        part_key = _combined([keys[i] for i in batch])
        result = await _embed_batch(gw, request, call, pcfg, price, texts, part_key)
        weights = [max(1, len(t)) for t in texts]
        for i, vector, weight in zip(batch, result.vectors, weights):
            # The API reports tokens per request; each text's share is apportioned by length.
            entry = CachedVector(
                vector=vector, tokens=round(result.usage.input_tokens * weight / sum(weights))
            )
            gw.cache.put_vector(keys[i], entry)
            found.update((j, entry) for j in same[keys[i]])
        usage += result.usage.input_tokens
        dollars += result.dollars
        retries += result.retries
        latency += result.latency_s
    return Embeddings(
        vectors=tuple(found[i].vector for i in range(len(keys))),
        usage=Usage(input_tokens=usage),
        provider=call.model.provider,
        model=call.model.model,
        dollars=dollars,
        cache_hit=not missing,
        latency_s=latency,
        retries=retries,
    )


async def _embed_batch(
    gw: Gateway,
    request: EmbedRequest,
    call: EmbedCall,
    pcfg: ProviderConfig,
    price: Price,
    texts: tuple[str, ...],
    key: str,
) -> Embeddings:
    batch = EmbedCall(
        model=call.model,
        texts=texts,
        role=call.role,
        timeout_s=call.timeout_s,
        dimensions=call.dimensions,
    )
    est = int(sum(len(t) for t in texts) / CHARS_PER_TOKEN)
    try:
        reservation = await gw.budget.reserve(price.dollars(est, 0, 0), request.role)
    except BudgetExceeded as exc:
        gw.record(request, call, Row(), key=key, error=f"budget: {exc}", cause="refused")
        raise
    provider = gw.provider(call.model.provider)
    assert isinstance(provider, EmbeddingProvider)  # checked by _resolve_embed
    dollars = 0.0
    tally = Tally(role=request.role, node_id=request.node_id)
    started = time.monotonic()
    try:
        result = await with_retries(
            gw.limiter(call.model.provider, pcfg),
            gw.queue,
            call.model.provider,
            call.model.model,
            call.role,
            pcfg,
            est,
            lambda: provider.embed(batch),
            tally,
        )
        dollars = price.dollars(result.usage.input_tokens, 0, 0) + tally.lost(price, est)[1]
    except Exception as exc:  # recorded whatever it is, then re-raised unchanged
        row = Row.unanswered([tally], price, est, time.monotonic() - started)
        dollars = row.dollars
        gw.record(request, call, row, key=key, error=str(exc) or type(exc).__name__, cause="failed")
        raise
    finally:
        await gw.budget.settle(reservation, dollars)
    result = result.model_copy(update={"dollars": dollars})
    row = Row(
        input_tokens=result.usage.input_tokens + est * max(0, tally.attempts - 1),
        dollars=dollars,
        latency_s=result.latency_s,
        retries=result.retries,
        attempts=tally.attempts,
        wall_s=time.monotonic() - started,
        queued_s=tally.queued_s,
        lost_dollars=tally.lost(price, est)[1],
    )
    gw.record(request, call, row, key=key)
    return result


def _combined(keys: list[str]) -> str:
    """One ledger key for a set of per-text keys: the same texts again give the same key."""
    return hashlib.sha256("".join(keys).encode()).hexdigest()


def _batches(indexes: list[int], est_tokens: list[float]) -> list[list[int]]:
    out: list[list[int]] = []
    size = 0.0
    for i, tokens in zip(indexes, est_tokens):
        if not out or len(out[-1]) == EMBED_BATCH_TEXTS or size + tokens > EMBED_BATCH_TOKENS:
            out.append([])
            size = 0.0
        out[-1].append(i)
        size += tokens
    return out
