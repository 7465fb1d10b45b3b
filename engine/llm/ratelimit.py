"""Per-provider admission control: requests/minute, tokens/minute and concurrency, on asyncio.

Token buckets refill continuously (what providers' own limiters do), hold one second's worth as
burst, and admit waiters in FIFO order. A request bigger than the burst is admitted once the
bucket is full and drives it negative, so the long-run rate stays right without deadlock.
A 429 with Retry-After pauses the whole provider, so other calls do not hammer it meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

BURST_S = 1.0


class TokenBucket:
    def __init__(self, per_minute: float, burst_s: float = BURST_S) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, amount: float) -> None:
        async with self._lock:  # FIFO: one waiter at a time owns the bucket
            need = min(amount, self.capacity)
            self._refill()
            while self.level < need:
                await asyncio.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def give_back(self, amount: float) -> None:
        """Return over-estimated tokens once the real usage is known."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)


class Limiter:
    def __init__(self, rpm: int | None, tpm: int | None, max_concurrency: int) -> None:
        self._requests = TokenBucket(rpm) if rpm else None
        self.tokens = TokenBucket(tpm) if tpm else None
        self._slots = asyncio.Semaphore(max_concurrency)
        self._paused_until = 0.0

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    def free_now(self) -> bool:
        """A call would start at once: a concurrency slot is free and no 429 pause holds."""
        return not self._slots.locked() and self._paused_until <= time.monotonic()

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        async with self._slots:
            while (wait := self._paused_until - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            if self._requests is not None:
                await self._requests.take(1)
            if self.tokens is not None:
                await self.tokens.take(tokens)
            yield
