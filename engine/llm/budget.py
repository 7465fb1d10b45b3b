"""The dollar budget, checked before every call.

A call is admitted only while `spent + reserved < limit`, where `reserved` is the worst-case
cost of the calls in flight (estimated input + max_tokens output). So however many calls run
at once, the run ends at most one call's cost over the limit. When only in-flight reservations
stand in the way, a caller waits for them to settle (they usually cost less than reserved);
once `spent` reaches the limit every call raises `BudgetExceeded` and the run stops, saying so.
"""

from __future__ import annotations

import asyncio

from engine.llm.errors import BudgetExceeded


class Budget:
    def __init__(self, limit: float | None, spent: float = 0.0) -> None:
        self.limit = limit
        self.spent = spent
        self.reserved = 0.0
        self._in_flight = 0  # counted, because float sums of reservations never quite return to 0
        self._settled: asyncio.Condition | None = None  # made on the gateway's loop, when first needed

    def _condition(self) -> asyncio.Condition:
        if self._settled is None:
            self._settled = asyncio.Condition()
        return self._settled

    async def reserve(self, estimate: float, what: str) -> float:
        if self.limit is None:
            return 0.0
        settled = self._condition()
        async with settled:
            while self.spent < self.limit and self._in_flight and self.spent + self.reserved >= self.limit:
                await settled.wait()
            if self.spent >= self.limit:
                raise BudgetExceeded(
                    f"LLM budget of ${self.limit:.2f} is spent (${self.spent:.4f} paid); not making the "
                    f"{what} call. Raise budgets.dollars in the run config to continue.",
                    spent=self.spent,
                    budget=self.limit,
                )
            self.reserved += estimate
            self._in_flight += 1
            return estimate

    def try_reserve(self, estimate: float) -> float | None:
        """A reservation only if it fits now, never waiting: for optional calls (a hedged copy)."""
        if self.limit is None:
            return 0.0
        if self.spent + self.reserved + estimate >= self.limit:
            return None
        self.reserved += estimate
        self._in_flight += 1
        return estimate

    async def settle(self, reservation: float, actual: float) -> None:
        self.spent += actual
        if self.limit is None:
            return
        settled = self._condition()
        async with settled:
            self._in_flight -= 1
            self.reserved = self.reserved - reservation if self._in_flight else 0.0
            settled.notify_all()
