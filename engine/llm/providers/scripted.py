"""A provider that answers by rule or by function: tests and offline demos, no network, no key.

Token usage is synthetic (about four characters a token) so accounting, budgets and rate limits
behave as they would with a real model. Embeddings are a hashed bag of words: deterministic in
every process (blake2b, not Python's salted `hash`), so texts sharing words are close.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Sequence

from engine.llm.config import ScriptRule
from engine.llm.providers.base import EmbedCall, ProviderCall
from engine.llm.types import Completion, Embeddings, Message, Usage

EMBED_DIMENSIONS = 256  # when the role asks for no `dimensions`

ScriptFn = Callable[[ProviderCall], str]


def _tokens(text: str) -> int:
    # The scripted model's own tokenizer, as a real one counts English prose: what it reports as
    # usage, not an estimate (the gateway's cautious estimate is prompt_budget.CHARS_PER_TOKEN).
    return max(1, len(text) // 4)


class ScriptedProvider:
    def __init__(
        self,
        name: str = "scripted",
        *,
        rules: Sequence[ScriptRule] = (),
        fn: ScriptFn | None = None,
        default: str = "",
        delay_s: float = 0.0,
    ) -> None:
        self.name = name
        self._rules = list(rules)
        self._fn = fn
        self._default = default
        self._delay_s = delay_s
        self.calls: list[ProviderCall] = []
        self.embed_calls: list[EmbedCall] = []

    def _answer(self, call: ProviderCall) -> str:
        last_user = last_user_text(call.messages)
        for rule in self._rules:
            if rule.role is not None and rule.role != call.role:
                continue
            if rule.contains is not None and rule.contains not in last_user:
                continue
            if rule.pattern is not None and not re.search(rule.pattern, last_user):
                continue
            if callable(rule.respond):
                return rule.respond(list(call.messages))
            return rule.respond if isinstance(rule.respond, str) else json.dumps(rule.respond)
        if self._fn is not None:
            return self._fn(call)
        return self._default

    async def complete(self, call: ProviderCall) -> Completion:
        start = time.monotonic()
        self.calls.append(call)
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        text = self._answer(call)
        prompt = "".join(m.text for m in call.messages)
        out_tokens = _tokens(text)
        truncated = out_tokens > call.max_tokens
        if truncated:
            text = text[: call.max_tokens * 4]
        return Completion(
            text=text,
            stop_reason="max_tokens" if truncated else "end",
            usage=Usage(input_tokens=_tokens(prompt), output_tokens=min(out_tokens, call.max_tokens)),
            provider=self.name,
            model=call.model.model,
            latency_s=time.monotonic() - start,
        )

    async def embed(self, call: EmbedCall) -> Embeddings:
        start = time.monotonic()
        self.embed_calls.append(call)
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        dims = call.dimensions or EMBED_DIMENSIONS
        return Embeddings(
            vectors=tuple(hashed_bag_of_words(t, dims) for t in call.texts),
            usage=Usage(input_tokens=sum(_tokens(t) for t in call.texts)),
            provider=self.name,
            model=call.model.model,
            latency_s=time.monotonic() - start,
        )

    async def aclose(self) -> None:
        return None


def hashed_bag_of_words(text: str, dims: int) -> tuple[float, ...]:
    """Each lower-cased word adds +-1 at a hashed position; the vector is L2-normalised."""
    vec = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[h % dims] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    return tuple(x / norm for x in vec) if norm else tuple(vec)


def last_user_text(messages: Sequence[Message]) -> str:
    """Helper for scripted functions: the text of the most recent user turn."""
    return next((m.text for m in reversed(messages) if m.role == "user"), "")
