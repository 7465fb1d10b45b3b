"""The dollar budget, checked before every call.

A call is admitted only while `spent + reserved < limit`, where `reserved` is the worst-case
cost of the calls in flight (estimated input + max_tokens output). So however many calls run
at once, the run ends at most one call's cost over the limit; then every call raises
`BudgetExceeded` and the run stops, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.llm.errors import BudgetExceeded


@dataclass
class Budget:
    limit: float | None
    spent: float = 0.0
    reserved: float = 0.0

    def reserve(self, estimate: float, what: str) -> float:
        if self.limit is not None and self.spent + self.reserved >= self.limit:
            raise BudgetExceeded(
                f"LLM budget of ${self.limit:.2f} is spent (${self.spent:.4f} paid, "
                f"${self.reserved:.4f} in flight); not making the {what} call. "
                "Raise budgets.dollars in the run config to continue.",
                spent=self.spent,
                budget=self.limit,
            )
        self.reserved += estimate
        return estimate

    def settle(self, reservation: float, actual: float) -> None:
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += actual

    @property
    def left(self) -> float | None:
        return None if self.limit is None else max(0.0, self.limit - self.spent)
