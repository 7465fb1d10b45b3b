"""The gateway core: the one place LLM calls are made, accounted and limited.

Per call: resolve the role, check capabilities, look in the cache, reserve against the dollar
budget, wait for the provider's rate limits and a concurrency slot, call with a deadline, retry
transient failures with exponential backoff and jitter (honouring Retry-After), then settle the
budget, write the cache and append to the ledger. Embeddings take the same path per batch of
texts the cache lacks (each text cached on its own). The same object runs in-process (tests, a
single-machine run: `call` drives a private event loop thread) or inside the Ray gateway actor
(`actors.gateway`, which awaits `acomplete` on the actor's own loop).

Its parts: what a request becomes (`resolve.py`), the attempts of one call (`retry.py`), the
numbers of its ledger row (`rows.py`), the queue `silva status` shows (`queuefile.py`) and the
embeddings path (`embeddings.py`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, TypeVar

from engine import cancel
from engine.cancel import JobCancelled
from engine.llm.budget import Budget
from engine.llm.cache import ResponseCache, cache_key
from engine.llm.client import LLM
from engine.llm.config import LLMConfig, ProviderConfig
from engine.llm.embeddings import embed_texts
from engine.llm.errors import BudgetExceeded, CacheMiss, LLMCallError, LLMConfigError
from engine.llm.hedge import LatencyBook, Race, race
from engine.llm.ledger import LEDGER_FILE, CallRecord, Cause, Ledger
from engine.llm.prompt_budget import budgets, estimate_tokens
from engine.llm.providers.base import EmbedCall, Provider, ProviderCall
from engine.llm.queuefile import QUEUE_FILE, QueueFile
from engine.llm.ratelimit import Limiter
from engine.llm.resolve import build_provider, refusal, resolve
from engine.llm.retry import progress, with_retries
from engine.llm.rows import Flight, Row, Tally
from engine.llm.types import Completion, Embeddings, EmbedRequest, LLMRequest, Usage

# What code outside engine.llm imports from here: `silva status` reads the queue file; `progress`
# is the logger commands attach a handler to (docs/llm.md, Progress).
__all__ = ["QUEUE_FILE", "Gateway", "progress"]

T = TypeVar("T")


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
        self.queue = QueueFile(self.run_dir / QUEUE_FILE)
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
        call, _ = resolve(self.cfg, request)
        self.record(request, call, Row(), key=cache_key(call, request.node_id), error=error, cause="invalid")

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
        call, pcfg = resolve(self.cfg, request)
        key = cache_key(call, request.node_id)  # never the attempt: a resume must not pay twice
        if (refused := refusal(self.cfg, request, call)) is not None:
            self.record(request, call, Row(), key=key, error=refused, cause="refused")
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
            self.record(request, call, Row.of(hit), key=key)
            return hit
        if self.cache.mode == "replay":
            self.record(request, call, Row(), key=key, error="cache miss in replay mode", cause="refused")
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
            self.record(request, call, Row(), key=key, error=f"budget: {exc}", cause="refused")
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
            self.record(
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
            self.record(f.request, f.call, row, key=f.key, error=error, cause="failed")
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
        if not self.limiter(f.call.model.provider, f.pcfg).free_now() or not self._copy_fits(f.pcfg, f.worst):
            return False
        f.hedge = self.budget.try_reserve(f.reservation)
        if f.hedge is not None:
            self._copies_reserved += f.worst
        return f.hedge is not None

    def _send(self, f: Flight) -> Awaitable[Completion]:
        """One copy of the call, with its retries and its own tally."""
        tally = Tally(role=f.request.role, node_id=f.request.node_id)
        f.tallies.append(tally)
        provider = self.provider(f.call.model.provider)
        return with_retries(
            self.limiter(f.call.model.provider, f.pcfg),
            self.queue,
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
        self.record(f.request, f.call, row, key=f.key, hedge="won" if won.hedged else None)
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
            self.record(request, call, row, key=key, error=f"hedged copy: {won.loser_error}", hedge="lost")
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
        self.record(request, call, Row.of(copy, tally, price, est_in, won.loser_s), key=key, hedge="lost")

    async def aembed(self, request: EmbedRequest) -> Embeddings:
        """Vectors for `request.texts`, in order (engine/llm/embeddings.py)."""
        return await embed_texts(self, request)

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

    def provider(self, name: str) -> Provider:
        if name not in self._providers:
            self._providers[name] = build_provider(name, self.cfg.providers[name], self._keys.get(name))
        return self._providers[name]

    def limiter(self, name: str, pcfg: ProviderConfig) -> Limiter:
        if name not in self._limiters:
            self._limiters[name] = Limiter(pcfg.rpm, pcfg.tpm, pcfg.max_concurrency)
        return self._limiters[name]

    def record(
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
