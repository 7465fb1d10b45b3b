"""The gateway core: the one place LLM calls are made, accounted and limited.

Per call: resolve the role, check capabilities, look in the cache, reserve against the dollar
budget, wait for the provider's rate limits and a concurrency slot, call with a deadline, retry
transient failures with exponential backoff and jitter (honouring Retry-After), then settle the
budget, write the cache and append to the ledger. Embeddings take the same path per batch of
texts the cache lacks (each text cached on its own). The same object runs in-process (tests, a
single-machine run: `call` drives a private event loop thread) or inside the Ray gateway actor
(`actors.gateway`, which awaits `acomplete` on the actor's own loop).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from engine import cancel
from engine.cancel import JobCancelled
from engine.llm.budget import Budget
from engine.llm.cache import ResponseCache, cache_key, embedding_key
from engine.llm.client import LLM
from engine.llm.config import EMBEDDING_KINDS, LLMConfig, Price, ProviderConfig
from engine.llm.errors import BudgetExceeded, CacheMiss, LLMCallError, LLMConfigError
from engine.llm.hedge import LatencyBook, Race, race
from engine.llm.ledger import LEDGER_FILE, CallRecord, Cause, Ledger
from engine.llm.prices import resolve_model
from engine.llm.prompt_budget import CHARS_PER_TOKEN, PROSE_CHARS_PER_TOKEN, budgets, estimate_tokens
from engine.llm.providers.base import EmbedCall, EmbeddingProvider, Provider, ProviderCall, ProviderError
from engine.llm.ratelimit import Limiter
from engine.llm.types import CachedVector, Completion, Embeddings, EmbedRequest, LLMRequest, Usage

log = logging.getLogger(__name__)
# One line per step of a call (sent, retried, answered, failed) for commands that show progress
# (`silva review`, `writeup`, `ideate`, `discover` attach a handler; docs/llm.md, Progress).
progress = logging.getLogger("silva.progress")

# One embeddings request holds at most this many texts and estimated tokens: below OpenAI's
# limits (2048 inputs, 300k tokens summed) with room for the estimate's error.
EMBED_BATCH_TEXTS = 256
EMBED_BATCH_TOKENS = 150_000

R = TypeVar("R", Completion, Embeddings)
T = TypeVar("T")


@dataclass
class Tally:
    """What one copy of a call did, for its ledger row."""

    attempts: int = 0  # requests sent to the provider
    timeouts: int = 0  # of which unanswered within timeout_s after the provider had the prompt
    queued_s: float = 0.0  # waiting for the provider's concurrency slot and rate limits
    role: str = ""  # what `silva status` shows of a call waiting in the queue
    node_id: str | None = None

    def lost(self, price: Price, est_in: int) -> tuple[int, float]:
        """The estimated prompt tokens of the attempts that timed out, and their charge: the
        provider read those prompts and may bill them."""
        return est_in * self.timeouts, price.dollars(est_in * self.timeouts, 0, 0)


@dataclass
class Row:
    """The numbers of one ledger row (engine/llm/ledger.py `CallRecord`)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    dollars: float = 0.0
    cache_hit: bool = False
    latency_s: float = 0.0
    retries: int = 0
    attempts: int = 0
    wall_s: float = 0.0
    queued_s: float = 0.0
    lost_dollars: float = 0.0
    stop_reason: str | None = None

    @classmethod
    def of(
        cls,
        c: Completion,
        tally: Tally | None = None,
        price: Price | None = None,
        est_in: int = 0,
        wall_s: float = 0.0,
    ) -> Row:
        """An answered call; its earlier attempts count their estimated prompts as tokens sent."""
        row = cls(
            input_tokens=c.usage.input_tokens,
            output_tokens=c.usage.output_tokens,
            cached_tokens=c.usage.cached_tokens,
            dollars=c.dollars,
            cache_hit=c.cache_hit,
            latency_s=c.latency_s,
            retries=c.retries,
            stop_reason=c.stop_reason,
        )
        if tally is not None and price is not None:
            row.input_tokens += est_in * max(0, tally.attempts - 1)
            row.attempts, row.queued_s, row.wall_s = tally.attempts, tally.queued_s, wall_s
            row.lost_dollars = tally.lost(price, est_in)[1]
        return row

    @classmethod
    def unanswered(cls, tallies: list[Tally], price: Price, est_in: int, wall_s: float) -> Row:
        """A call (or a copy) with no answer: its estimated prompt per attempt sent, charged for
        the attempts that timed out."""
        attempts = sum(t.attempts for t in tallies)
        lost = sum(t.lost(price, est_in)[1] for t in tallies)
        return cls(
            input_tokens=est_in * attempts,
            dollars=lost,
            latency_s=wall_s,
            retries=max(0, attempts - 1),
            attempts=attempts,
            wall_s=wall_s,
            queued_s=sum(t.queued_s for t in tallies),
            lost_dollars=lost,
        )


@dataclass
class Flight:
    """One completion on its way through the gateway: what `_fly` and `_land` share."""

    request: LLMRequest
    call: ProviderCall
    pcfg: ProviderConfig
    key: str
    price: Price
    est_in: int
    worst: float  # its dollars at most: estimated input and max_tokens
    reservation: float
    started: float
    tallies: list[Tally] = field(default_factory=list)  # one per copy sent
    hedge: float | None = None  # the second copy's budget reservation, once one is sent
    dollars: float = 0.0  # what the answer cost, timed-out attempts included


QUEUE_FILE = "llm_queue.json"


class QueueFile:
    """The calls waiting in the gateway for their provider's concurrency and rate limits, written
    to `<run_dir>/llm_queue.json` for `silva status` at most once a second (and when it empties)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._waiting: dict[int, tuple[Tally, float]] = {}  # id(tally) -> (tally, since: epoch seconds)
        self._written = 0.0
        self._pending = False

    def enter(self, tally: Tally) -> None:
        self._waiting[id(tally)] = (tally, time.time())
        self._changed()

    def leave(self, tally: Tally) -> None:
        if self._waiting.pop(id(tally), None) is not None:
            self._changed()

    def _changed(self) -> None:
        if self._pending:
            return
        self._pending = True
        delay = 0.0 if not self._waiting else max(0.0, self._written + 1.0 - time.monotonic())
        asyncio.get_running_loop().call_later(delay, self._write)

    def _write(self) -> None:
        self._pending = False
        self._written = time.monotonic()
        waiting = [
            {"role": t.role, "node_id": t.node_id, "since": since} for t, since in self._waiting.values()
        ]
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"ts": time.time(), "waiting": waiting}))
            tmp.replace(self.path)
        except OSError as exc:  # a status aid only: never a reason to fail a call
            log.warning("could not write %s: %s", self.path, exc)


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


class Gateway:
    def __init__(
        self,
        cfg: LLMConfig,
        run_dir: Path,
        *,
        dollars: float | None = None,
        keys: Mapping[str, str] | None = None,
        providers: Mapping[str, Provider] | None = None,
    ) -> None:
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.ledger = Ledger(self.run_dir / LEDGER_FILE)
        # A resumed run starts from what earlier sessions already paid.
        paid = self.ledger.records()
        self.budget = Budget(dollars, spent=sum(r.dollars for r in paid))
        self.latencies = LatencyBook(paid)  # when to hedge a slow call: from this run's calls so far
        # Second copies of hedged calls: paid so far, and reserved at their worst case while in flight.
        self._copies_spent = sum(r.dollars for r in paid if r.hedge == "lost")
        self._copies_reserved = 0.0
        self._queue = QueueFile(self.run_dir / QUEUE_FILE)
        self.cache = ResponseCache(cfg.cache.dir or self.run_dir / "llm_cache", cfg.cache.mode)
        self._keys = dict(keys or {})
        self._providers: dict[str, Provider] = dict(providers or {})
        self._limiters: dict[str, Limiter] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    def __reduce__(self) -> Any:
        raise TypeError(
            "an in-process Gateway holds API keys and an event loop and cannot be sent to another "
            "process; use actors.gateway.start_gateway_actor for Ray workers"
        )

    # -- public ------------------------------------------------------------------------------
    def call(self, request: LLMRequest) -> Completion:
        """Synchronous entry point (the `Transport` protocol of `engine.llm.client.LLM`)."""
        return self._run(self.acomplete(request))

    def embed(self, request: EmbedRequest) -> Embeddings:
        """Synchronous entry point for embeddings (the `Transport` protocol)."""
        return self._run(self.aembed(request))

    def ledger_note(self, request: LLMRequest, error: str) -> None:
        """A structured chain gave up (the `Transport` protocol): one ledger line, nothing sent."""
        self._run(self.aledger_note(request, error))

    async def aledger_note(self, request: LLMRequest, error: str) -> None:
        """The chain's line, on the gateway's loop like every other ledger write: cause "invalid",
        no tokens, no dollars, keyed as its last ask so `silva cost` ties it to the chain."""
        call, _ = self._resolve(request)
        self._record(request, call, Row(), key=cache_key(call, request.node_id), error=error, cause="invalid")

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        token = cancel.current()
        if token is not None and token.cancelled:
            coro.close()
            raise JobCancelled
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        if token is None:
            return future.result()
        while True:  # a cancelled job (its node discarded) stops waiting and its call is cancelled
            try:
                return future.result(timeout=cancel.POLL_S)
            except TimeoutError:
                if future.done():  # the call itself timed out: its error, not a poll
                    return future.result()
                if token.cancelled:
                    future.cancel()
                    raise JobCancelled from None

    async def acomplete(self, request: LLMRequest) -> Completion:
        call, pcfg = self._resolve(request)
        key = cache_key(call, request.node_id)  # never the attempt: a resume must not pay twice
        if (refused := self._refusal(request, call)) is not None:
            self._record(request, call, Row(), key=key, error=refused, cause="refused")
            raise LLMCallError(refused)
        hit = self._from_cache(request, call, key)
        if hit is not None:
            return hit
        flight = await self._admit(request, call, pcfg, key)
        won = await self._fly(flight)
        return await self._land(flight, won)

    def _from_cache(self, request: LLMRequest, call: ProviderCall, key: str) -> Completion | None:
        """The cached answer (free, one cache-hit line), None to send; a replay that misses raises."""
        cached = self.cache.get(key)
        if cached is not None:
            hit = cached.model_copy(
                update={"cache_hit": True, "dollars": 0.0, "latency_s": 0.0, "retries": 0}
            )
            self._record(request, call, Row.of(hit), key=key)
            return hit
        if self.cache.mode == "replay":
            self._record(request, call, Row(), key=key, error="cache miss in replay mode", cause="refused")
            raise CacheMiss(
                f"replay: no cached response for a {request.role!r} call (node {request.node_id}); "
                "the replayed run asked something the original run did not"
            )
        return None

    async def _admit(self, request: LLMRequest, call: ProviderCall, pcfg: ProviderConfig, key: str) -> Flight:
        """The call's reservation against the dollar budget, at its worst case."""
        price = call.model.price
        if price is None:
            raise LLMConfigError(
                f"model {call.model.name!r} ({call.model.model}) has no price; "
                "set llm.models.<name>.price (input/output USD per million tokens)"
            )
        est_in = estimate_tokens(call.messages)
        worst = price.dollars(est_in, call.max_tokens, 0)
        started = time.monotonic()
        try:
            reservation = await self.budget.reserve(worst, request.role)
        except BudgetExceeded as exc:
            self._record(request, call, Row(), key=key, error=f"budget: {exc}", cause="refused")
            raise
        return Flight(request, call, pcfg, key, price, est_in, worst, reservation, started)

    async def _fly(self, f: Flight) -> Race[Completion]:
        """Send the call (a second copy when hedging says so) until a copy answers; a call with
        no answer is recorded and its error re-raised unchanged. The reservations are settled."""
        won: Race[Completion] | None = None
        dollars = 0.0
        progress.info(
            "%s call sent to %s/%s%s: ~%d tokens in, at most %d out",
            f.request.role,
            f.call.model.provider,
            f.call.model.name,
            f" for node {f.request.node_id}" if f.request.node_id else "",
            f.est_in,
            f.call.max_tokens,
        )
        hedge = f.pcfg.hedge
        at_once = f.request.blocking and hedge is not None and hedge.at_once_when_blocking
        book = (f.call.model.provider, f.call.model.model, f.call.role)
        try:
            won = await race(
                lambda: self._send(f),
                0.0 if at_once else self.latencies.delay(book, hedge),
                lambda: self._may_hedge(f),
            )
            usage = won.result.usage
            dollars = f.price.dollars(usage.input_tokens, usage.output_tokens, usage.cached_tokens)
        except Exception as exc:  # recorded whatever it is, then re-raised unchanged
            row = Row.unanswered(f.tallies, f.price, f.est_in, time.monotonic() - f.started)
            dollars = row.dollars
            self._record(
                f.request, f.call, row, key=f.key, error=str(exc) or type(exc).__name__, cause="failed"
            )
            progress.info("%s call failed after %.1f s: %s", f.request.role, row.wall_s, exc)
            raise
        except asyncio.CancelledError:
            # The job that asked was cancelled (engine/cancel.py). The provider has read the
            # prompt and may bill it: charged at the estimate, and kept in the ledger.
            row = Row.unanswered(f.tallies, f.price, f.est_in, time.monotonic() - f.started)
            dollars = row.dollars = row.dollars + f.price.dollars(f.est_in, 0, 0)
            row.input_tokens = max(row.input_tokens, f.est_in)
            error = "cancelled: the job that asked no longer needs it"
            self._record(f.request, f.call, row, key=f.key, error=error, cause="failed")
            raise
        finally:
            # Always: a reservation left behind would hold back every later caller.
            if won is None and f.hedge is not None:  # both copies failed: nothing answered, nothing billed
                self._copies_reserved -= f.worst
                await self.budget.settle(f.hedge, 0.0)
            if won is not None:
                dollars += f.tallies[won.winner].lost(f.price, f.est_in)[1]
            f.dollars = dollars
            await self.budget.settle(f.reservation, dollars)
        # The first copy's time even when it lost (a lower bound), so the book's tail stays true.
        self.latencies.add(book, won.first_s)
        return won

    def _may_hedge(self, f: Flight) -> bool:
        """A copy never queues: not while the provider is at its concurrency limit or paused by a
        429 (it would only add load), nor beyond the dollar budget or the copies' cap."""
        if not self._limiter(f.call.model.provider, f.pcfg).free_now() or not self._copy_fits(
            f.pcfg, f.worst
        ):
            return False
        f.hedge = self.budget.try_reserve(f.reservation)
        if f.hedge is not None:
            self._copies_reserved += f.worst
        return f.hedge is not None

    def _send(self, f: Flight) -> Awaitable[Completion]:
        """One copy of the call, with its retries and its own tally."""
        tally = Tally(role=f.request.role, node_id=f.request.node_id)
        f.tallies.append(tally)
        provider = self._provider(f.call.model.provider)
        return self._with_retries(
            f.call.model.provider,
            f.call.model.model,
            f.call.role,
            f.pcfg,
            f.est_in + f.call.max_tokens,
            lambda: provider.complete(f.call),
            tally,
        )

    async def _land(self, f: Flight, won: Race[Completion]) -> Completion:
        """Cache and record the answer (and the losing copy of a hedged call)."""
        completion = won.result.model_copy(update={"dollars": f.dollars})
        self.cache.put(f.key, completion)
        row = Row.of(completion, f.tallies[won.winner], f.price, f.est_in, time.monotonic() - f.started)
        self._record(f.request, f.call, row, key=f.key, hedge="won" if won.hedged else None)
        progress.info(
            "%s answered in %.1f s: %d tokens out%s",
            f.request.role,
            row.wall_s,
            row.output_tokens,
            f", after {row.attempts} attempts" if row.attempts > 1 else "",
        )
        if won.hedged:
            loser = f.tallies[1 - won.winner]
            await self._record_loser(f.request, f.call, won, f.key, f.hedge or 0.0, loser, f.worst)
        return completion

    def _copy_fits(self, pcfg: ProviderConfig, worst: float) -> bool:
        """A second copy at its worst-case cost keeps the copies' spend within
        `hedge.max_extra_fraction` of the run's spend so far (a free model's copies always fit)."""
        assert pcfg.hedge is not None
        if pcfg.hedge.max_extra_fraction is None:
            return True
        cap = pcfg.hedge.max_extra_fraction * self.budget.spent
        return self._copies_spent + self._copies_reserved + worst <= cap

    async def _record_loser(
        self,
        request: LLMRequest,
        call: ProviderCall,
        won: Race[Completion],
        key: str,
        reservation: float,
        tally: Tally,
        worst: float,
    ) -> None:
        """The other copy of a hedged call: paid for real when it answered too, nothing when it
        failed (but for its timed-out attempts), and when cancelled charged as if it had read the
        whole prompt and written the winner's output (providers may bill tokens generated before a
        disconnect), so the budget never under-counts."""
        price, winner, loser = call.model.price, won.result, won.loser
        assert price is not None
        self._copies_reserved -= worst
        est_in = estimate_tokens(call.messages)
        if won.loser_error is not None:
            row = Row.unanswered([tally], price, est_in, won.loser_s)
            self._copies_spent += row.dollars
            await self.budget.settle(reservation, row.dollars)
            self._record(request, call, row, key=key, error=f"hedged copy: {won.loser_error}", hedge="lost")
            return
        usage = (
            loser.usage
            if loser is not None
            else Usage(input_tokens=winner.usage.input_tokens, output_tokens=winner.usage.output_tokens)
        )
        dollars = price.dollars(usage.input_tokens, usage.output_tokens, usage.cached_tokens)
        dollars += tally.lost(price, est_in)[1]
        self._copies_spent += dollars
        await self.budget.settle(reservation, dollars)
        # Its running time, a lower bound when cancelled: with the winner's, the ledger keeps how
        # long the first copy took (engine/llm/hedge.py LatencyBook).
        copy = (loser or winner).model_copy(
            update={"usage": usage, "dollars": dollars, "retries": 0, "latency_s": won.loser_s}
        )
        self._record(request, call, Row.of(copy, tally, price, est_in, won.loser_s), key=key, hedge="lost")

    async def aembed(self, request: EmbedRequest) -> Embeddings:
        """Vectors for `request.texts`, in order. Texts the cache holds cost nothing (one cache-hit
        ledger record covers them); the others are sent in batches, each admitted by the budget,
        rate-limited, retried, priced and recorded like a completion."""
        call, pcfg, price = self._resolve_embed(request)
        keys = [embedding_key(call.model, call.dimensions, t) for t in request.texts]
        found: dict[int, CachedVector] = {}
        for i, key in enumerate(keys):
            if (entry := self.cache.get_vector(key)) is not None:
                found[i] = entry
        missing = [i for i in range(len(keys)) if i not in found]
        batch_key = _combined(keys)
        if found:
            self._record(
                request,
                call,
                Row(input_tokens=sum(e.tokens for e in found.values()), cache_hit=True),
                key=batch_key if not missing else _combined([keys[i] for i in found]),
            )
        if missing and self.cache.mode == "replay":
            self._record(
                request, call, Row(), key=batch_key, error="cache miss in replay mode", cause="refused"
            )
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
            result = await self._embed_batch(
                request, call, pcfg, price, texts, _combined([keys[i] for i in batch])
            )
            weights = [max(1, len(t)) for t in texts]
            for i, vector, weight in zip(batch, result.vectors, weights):
                # The API reports tokens per request; each text's share is apportioned by length.
                entry = CachedVector(
                    vector=vector, tokens=round(result.usage.input_tokens * weight / sum(weights))
                )
                self.cache.put_vector(keys[i], entry)
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
        self,
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
            reservation = await self.budget.reserve(price.dollars(est, 0, 0), request.role)
        except BudgetExceeded as exc:
            self._record(request, call, Row(), key=key, error=f"budget: {exc}", cause="refused")
            raise
        provider = self._provider(call.model.provider)
        assert isinstance(provider, EmbeddingProvider)  # checked by _resolve_embed
        dollars = 0.0
        tally = Tally(role=request.role, node_id=request.node_id)
        started = time.monotonic()
        try:
            result = await self._with_retries(
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
            self._record(request, call, row, key=key, error=str(exc) or type(exc).__name__, cause="failed")
            raise
        finally:
            await self.budget.settle(reservation, dollars)
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
        self._record(request, call, row, key=key)
        return result

    def client(self) -> LLM:
        """An `LLM` client bound to this in-process gateway."""
        return LLM(self, max_reasks=self.cfg.max_reasks, budgets=budgets(self.cfg))

    def spent(self) -> float:
        return self.budget.spent

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
        self._loop = self._thread = None

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()

    # -- internals ---------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=loop.run_forever, name="silva-llm-gateway", daemon=True
                )
                self._thread.start()
                self._loop = loop
            return self._loop

    def _resolve(self, request: LLMRequest) -> tuple[ProviderCall, ProviderConfig]:
        role = self.cfg.roles.get(request.role)
        if role is None:
            raise LLMConfigError(
                f"no model configured for LLM role {request.role!r}; add it under llm.roles "
                f"(configured: {', '.join(sorted(self.cfg.roles)) or 'none'})"
            )
        model = resolve_model(self.cfg, role.model)
        caps = model.capabilities
        if not caps.chat:
            raise LLMConfigError(chat_caps_problem(request.role, role.model))
        pcfg = self.cfg.providers[model.provider]
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

    def _refusal(self, request: LLMRequest, call: ProviderCall) -> str | None:
        """Why the call cannot be answered by its model, found before anything is sent or paid:
        images for a model without vision, a prompt the model's context cannot hold."""
        role, caps = self.cfg.roles[request.role], call.model.capabilities
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

    def _resolve_embed(self, request: EmbedRequest) -> tuple[EmbedCall, ProviderConfig, Price]:
        role = self.cfg.roles.get(request.role)
        if role is None:
            raise LLMConfigError(
                f"no model configured for LLM role {request.role!r}; add it under llm.roles, "
                "mapped to an embedding model (e.g. text-embedding-3-small)"
            )
        model = resolve_model(self.cfg, role.model)
        pcfg = self.cfg.providers[model.provider]
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
        if not isinstance(self._provider(model.provider), EmbeddingProvider):
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

    def _provider(self, name: str) -> Provider:
        if name not in self._providers:
            self._providers[name] = build_provider(name, self.cfg.providers[name], self._keys.get(name))
        return self._providers[name]

    def _limiter(self, name: str, pcfg: ProviderConfig) -> Limiter:
        if name not in self._limiters:
            self._limiters[name] = Limiter(pcfg.rpm, pcfg.tpm, pcfg.max_concurrency)
        return self._limiters[name]

    async def _with_retries(
        self,
        name: str,
        model_id: str,
        role: str,
        pcfg: ProviderConfig,
        est_tokens: int,
        attempt_once: Callable[[], Awaitable[R]],
        tally: Tally,
    ) -> R:
        """Attempts until one answers, each within `timeout_s` of being sent, all of them (queue
        and backoff included) within the call's deadline of `(max_retries + 1) * timeout_s`: a
        call queued behind slow ones fails in the time its config allows."""
        limiter = self._limiter(name, pcfg)
        error = ProviderError("not attempted", retryable=False)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + pcfg.timeout_s * (pcfg.max_retries + 1)
        for attempt in range(pcfg.max_retries + 1):
            queued = loop.time()
            sent = False
            self._queue.enter(tally)
            try:
                async with asyncio.timeout_at(deadline), limiter.slot(est_tokens):
                    self._queue.leave(tally)
                    tally.queued_s += loop.time() - queued
                    tally.attempts += 1
                    sent = True
                    async with asyncio.timeout(pcfg.timeout_s):
                        result = await attempt_once()
                    if limiter.tokens is not None:
                        used = result.usage.input_tokens + result.usage.output_tokens
                        limiter.tokens.give_back(max(0, est_tokens - used))
                    return result.model_copy(update={"retries": attempt})
            except ProviderError as exc:
                error = exc
            except TimeoutError:
                if sent:
                    tally.timeouts += 1
                else:
                    tally.queued_s += loop.time() - queued
                error = _timed_out(sent, pcfg.timeout_s)
            finally:
                self._queue.leave(tally)  # however the wait ended: cancelled, timed out, admitted
            if not error.retryable or attempt == pcfg.max_retries:
                break
            delay = self._backoff(pcfg, attempt, error.retry_after)
            if error.retry_after is not None:
                limiter.pause(delay)
            progress.info(
                "%s call to %s/%s: %s; retry %d in %.1f s", role, name, model_id, error, attempt + 1, delay
            )
            if loop.time() + delay >= deadline:
                break
            await asyncio.sleep(delay)
        tries = "not retryable" if not error.retryable else f"after {tally.attempts} attempts"
        raise LLMCallError(
            f"LLM call to provider {name!r} model {model_id!r} for role {role!r} failed ({tries}): {error}"
        )

    @staticmethod
    def _backoff(pcfg: ProviderConfig, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server knows when it will take us again; a little jitter spreads the herd.
            return min(retry_after, pcfg.backoff_max_s) * random.uniform(1.0, 1.1)
        return min(pcfg.backoff_max_s, pcfg.backoff_base_s * 2.0**attempt) * random.uniform(0.5, 1.0)

    def _record(
        self,
        request: LLMRequest | EmbedRequest,
        call: ProviderCall | EmbedCall,
        row: Row,
        *,
        key: str,
        error: str | None = None,
        hedge: Literal["won", "lost"] | None = None,
        cause: Cause | None = None,
    ) -> None:
        self.ledger.append(
            CallRecord(
                chain=request.chain if isinstance(request, LLMRequest) else None,
                reask=request.reask if isinstance(request, LLMRequest) else 0,
                cause=cause,
                role=request.role,
                node_id=request.node_id,
                stage=request.stage,
                idea=request.idea,
                provider=call.model.provider,
                model=call.model.model,
                attempt=request.attempt if isinstance(request, LLMRequest) else 0,
                error=error,
                key=key,
                hedge=hedge,
                **asdict(row),
            )
        )


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


def _timed_out(sent: bool, timeout_s: float) -> ProviderError:
    """An attempt's deadline passed: after it was sent (retried), or while it still waited in
    the gateway's queue (the call's whole deadline: not retried)."""
    if sent:
        return ProviderError(f"no answer within {timeout_s}s", retryable=True)
    return ProviderError(
        "not sent: the call's deadline passed while it waited in the gateway's queue for the "
        "provider's concurrency and rate limits (raise max_concurrency, rpm or tpm, or timeout_s)",
        retryable=False,
    )


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
