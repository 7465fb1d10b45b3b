"""Errors of the LLM layer. Each message names what is wrong, where, and how to fix it.

They subclass Silva's user-facing errors so the CLI prints them without a traceback, and they
pickle cleanly (message as the only positional argument) so they cross the Ray actor boundary.
"""

from __future__ import annotations

from engine.errors import ConfigError, SilvaError


class LLMError(SilvaError):
    """Base of every LLM-layer failure."""


class LLMConfigError(LLMError, ConfigError):
    """The LLM config cannot work: raised at start, before any call is paid for."""

    exit_code = 2


class BudgetExceeded(LLMError):
    """The dollar budget is spent; the run stops cleanly instead of making this call."""

    exit_code = 3

    def __init__(self, message: str, *, spent: float = 0.0, budget: float = 0.0) -> None:
        super().__init__(message)
        self.spent = spent
        self.budget = budget


class LLMCallError(LLMError):
    """A call failed for good: not retryable, or retries exhausted. Recorded in the ledger."""


class StructuredOutputError(LLMError):
    """The model's answer did not validate after the bounded number of re-asks."""


class CacheMiss(LLMError):
    """Replay mode found no cached response for a call: the replayed run diverged."""
