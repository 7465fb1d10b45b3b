"""What a call through the gateway did, for its ledger row: per copy sent (`Tally`), the row's
numbers (`Row`), and a completion on its way through the gateway (`Flight`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.llm.config import Price, ProviderConfig
from engine.llm.providers.base import ProviderCall
from engine.llm.types import Completion, LLMRequest


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
