"""Hedged LLM requests: cut the latency tail that stalls a pipelined search.

A stage is decided once all its nodes are in, so one slow answer idles every slot (measured:
a 38 s call in a stage whose calls took 3 s at the median held the whole stage). A call still
unanswered at its usual `quantile` latency is sent once more and the first answer wins; the
other copy is cancelled. Latencies are kept per (provider, model, role), seeded from the ledger
so a resumed run hedges at once; a role with too few calls of its own (a stage's selection
is asked once) goes by all the calls of its model until it has enough. A cancelled copy's time
is kept as what it is, a lower bound: counting only winners would shrink the quantile and
hedge ever more.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from engine.llm.config import HedgeConfig
from engine.llm.ledger import CallRecord

T = TypeVar("T")
Key = tuple[str, str, str]  # provider, model, role
WINDOW = 256  # latencies kept per key: recent enough to follow a provider's mood


class LatencyBook:
    def __init__(self, records: Iterable[CallRecord] = ()) -> None:
        self._seen: dict[Key, deque[float]] = {}
        self._model: dict[tuple[str, str], deque[float]] = {}  # every role's calls, per model
        won: dict[str | None, float] = {}
        for r in records:
            if r.error is not None or r.cache_hit:
                continue
            if r.hedge == "won":  # its pair's "lost" record follows: the first copy ran the longer of the two
                won[r.key] = r.latency_s
            elif r.hedge == "lost":
                self.add((r.provider, r.model, r.role), max(r.latency_s, won.pop(r.key, 0.0)))
            elif r.latency_s > 0:
                self.add((r.provider, r.model, r.role), r.latency_s)

    def add(self, key: Key, seconds: float) -> None:
        self._seen.setdefault(key, deque(maxlen=WINDOW)).append(seconds)
        self._model.setdefault(key[:2], deque(maxlen=WINDOW)).append(seconds)

    def delay(self, key: Key, cfg: HedgeConfig | None) -> float | None:
        """How long to wait before sending a second copy; None: do not hedge (off, or too few
        calls of the role, or of its model, seen to know what slow is)."""
        if cfg is None:
            return None
        seen = next(
            (
                s
                for s in (self._seen.get(key), self._model.get(key[:2]))
                if s is not None and len(s) >= cfg.min_samples
            ),
            None,
        )
        if seen is None:
            return None
        ordered = sorted(seen)
        at = ordered[min(len(ordered) - 1, math.ceil(cfg.quantile * len(ordered)) - 1)]
        return max(cfg.min_delay_s, at)


@dataclass
class Race(Generic[T]):
    """How a hedged call ended: the answer, and what became of the other copy."""

    result: T
    hedged: bool  # a second copy was sent
    loser: T | None  # the other copy's answer when it came back too (then it was paid for real)
    loser_error: str | None  # the other copy's error when it failed (nothing answered, nothing billed)
    first_s: float  # how long the first copy ran: its latency, or a lower bound of it when it lost
    loser_s: float  # how long the other copy ran (a lower bound of its latency when cancelled)
    winner: int = 0  # which copy answered: 0 the first, 1 the second


async def race(
    send: Callable[[], Awaitable[T]], delay: float | None, may_hedge: Callable[[], bool]
) -> Race[T]:
    """`send()` once; if it has not answered after `delay` s and `may_hedge()` agrees (it takes
    the budget's reservation for the copy), once more. First success wins; a copy that fails
    leaves the race to the other; both failing raises the first copy's error."""
    start = time.monotonic()
    copies = [asyncio.ensure_future(send())]
    sent = [start]
    try:
        if delay is not None:
            await asyncio.wait(copies, timeout=delay)
            if not copies[0].done() and may_hedge():
                copies.append(asyncio.ensure_future(send()))
                sent.append(time.monotonic())
        pending: set[asyncio.Future[T]] = set(copies)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            ok = [
                c for c in copies if c in done and c.exception() is None
            ]  # exception(): retrieved, never warned
            if ok:
                won = copies.index(ok[0])
                now = time.monotonic()
                other = copies[1 - won] if len(copies) > 1 else None
                failed = other.exception() if other is not None and other.done() else None
                loser = other.result() if other is not None and other.done() and failed is None else None
                return Race(
                    ok[0].result(),
                    len(copies) > 1,
                    loser,
                    None if failed is None else str(failed) or type(failed).__name__,
                    now - start,
                    now - sent[1 - won] if len(copies) > 1 else 0.0,
                    won,
                )
        error = copies[0].exception()
        assert error is not None
        raise error
    finally:
        for c in copies:
            if not c.done():
                c.cancel()
