"""The LLM gateway as a Ray actor: the only process of a run that holds API keys.

Key isolation. The driver removes the key variables from its own environment with
`engine.llm.take_api_keys(cfg, os.environ)` *before* `ray.init()`, so the raylet and every worker
it forks (and every sandbox they start) inherit an environment without keys. The key values go
to this actor only, as constructor arguments held in its memory; they are never placed in a
`runtime_env` (which would export them to a process environment). Workers get an `LLM` whose
transport is this actor's handle: a picklable way to ask, with nothing secret in it.

Why an asyncio actor: LLM calls are network waits. One event loop keeps hundreds of calls in
flight (`max_concurrency`), and the rate limiters, budget and ledger are touched by one thread
only, so they need no locks. A restarted actor rebuilds its state from the ledger and the cache
on disk, so a completed call is never paid twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from engine.llm import LLM, Gateway, LLMConfig, LLMError
from engine.llm.prompt_budget import budgets
from engine.llm.providers.base import Provider
from engine.llm.types import Completion, Embeddings, EmbedRequest, LLMRequest

ACTOR_RETRIES = 3  # an in-flight call to a restarting actor fails; the cache makes a retry free


class GatewayActor:
    def __init__(
        self,
        cfg: LLMConfig,
        run_dir: str,
        dollars: float | None,
        keys: Mapping[str, str],
        providers: Mapping[str, Provider] | None,
    ) -> None:
        self._gateway = Gateway(cfg, Path(run_dir), dollars=dollars, keys=keys, providers=providers)

    async def complete(self, request: LLMRequest) -> Completion:
        return await self._gateway.acomplete(request)

    async def embed(self, request: EmbedRequest) -> Embeddings:
        return await self._gateway.aembed(request)

    async def ledger_note(self, request: LLMRequest, error: str) -> None:
        await self._gateway.aledger_note(request, error)

    async def close(self) -> None:
        await self._gateway.aclose()


class ActorTransport:
    """`Transport` over the actor handle. Re-raises the gateway's own errors (BudgetExceeded,
    LLMCallError, ...) unwrapped, so node code catches them as it would in-process."""

    def __init__(self, handle: ray.actor.ActorHandle) -> None:
        self.handle = handle

    def call(self, request: LLMRequest) -> Completion:
        return self._ask(self.handle.complete, request)

    def embed(self, request: EmbedRequest) -> Embeddings:
        return self._ask(self.handle.embed, request)

    def ledger_note(self, request: LLMRequest, error: str) -> None:
        self._ask(self.handle.ledger_note, request, error)

    @staticmethod
    def _ask(method: Any, *args: Any) -> Any:
        attempt = 0
        while True:
            try:
                return ray.get(method.remote(*args))
            except RayTaskError as exc:
                if isinstance(exc.cause, LLMError):
                    raise exc.cause from None
                raise
            except RayActorError:  # includes ActorUnavailableError (restarting)
                if attempt == ACTOR_RETRIES:
                    raise
                attempt += 1
                time.sleep(0.5 * 2**attempt)


def start_gateway_actor(
    cfg: LLMConfig,
    run_dir: Path,
    dollars: float | None,
    *,
    keys: Mapping[str, str],
    providers: Mapping[str, Provider] | None = None,
    max_concurrency: int = 256,
    name: str | None = None,
) -> LLM:
    """Start the gateway actor and return an `LLM` client for it (picklable: pass it to tasks).

    `keys`: provider name -> API key, from `engine.llm.take_api_keys(cfg, os.environ)` called
    before `ray.init()`. The actor takes no CPU slot: it only waits on the network.
    """
    actor_cls = ray.remote(GatewayActor)
    handle = actor_cls.options(num_cpus=0, max_concurrency=max_concurrency, max_restarts=3, name=name).remote(
        cfg, str(run_dir), dollars, dict(keys), dict(providers) if providers else None
    )
    # Ray types `.options(...).remote(...)` as a handle or the class itself; it is a handle.
    return LLM(
        ActorTransport(cast("ray.actor.ActorHandle[GatewayActor]", handle)),
        max_reasks=cfg.max_reasks,
        budgets=budgets(cfg),
    )


def close_gateway_actor(llm: LLM, timeout_s: float = 30.0) -> None:
    """Close the providers' HTTP clients inside the actor (they hold connections), then end it."""
    transport = llm.transport
    if not isinstance(transport, ActorTransport):
        return
    try:
        ray.get(transport.handle.close.remote(), timeout=timeout_s)
    except (RayActorError, GetTimeoutError):
        pass  # already gone: nothing left to close
    ray.kill(transport.handle)
