"""Attempts of one provider call: its rate limits and concurrency slot, a deadline per attempt and
for the whole call, and retries of transient failures with exponential backoff and jitter
(honouring Retry-After)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from engine.llm.config import ProviderConfig
from engine.llm.errors import LLMCallError
from engine.llm.providers.base import ProviderError
from engine.llm.queuefile import QueueFile
from engine.llm.ratelimit import Limiter
from engine.llm.rows import Tally
from engine.llm.types import Completion, Embeddings

progress = logging.getLogger("silva.progress")  # docs/llm.md, Progress

R = TypeVar("R", Completion, Embeddings)


async def with_retries(
    limiter: Limiter,
    queue: QueueFile,
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
    error = ProviderError("not attempted", retryable=False)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + pcfg.timeout_s * (pcfg.max_retries + 1)
    for attempt in range(pcfg.max_retries + 1):
        queued = loop.time()
        sent = False
        queue.enter(tally)
        try:
            async with asyncio.timeout_at(deadline), limiter.slot(est_tokens):
                queue.leave(tally)
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
            queue.leave(tally)  # however the wait ended: cancelled, timed out, admitted
        if not error.retryable or attempt == pcfg.max_retries:
            break
        delay = backoff(pcfg, attempt, error.retry_after)
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


def backoff(pcfg: ProviderConfig, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        # The server knows when it will take us again; a little jitter spreads the herd.
        return min(retry_after, pcfg.backoff_max_s) * random.uniform(1.0, 1.1)
    return min(pcfg.backoff_max_s, pcfg.backoff_base_s * 2.0**attempt) * random.uniform(0.5, 1.0)


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
