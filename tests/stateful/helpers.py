"""A small StatefulDiscovery run on the engine with the scripted analyst (no sandbox, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from engine import events as ev
from engine.config import Budgets, ExecutorConfig, Resources
from engine.dispatch import Dispatcher, RunOutcome
from engine.executor import InProcessExecutor
from engine.journal import Journal
from engine.llm import LLMConfig, build_gateway
from engine.llm.providers.scripted import ScriptedProvider
from search.discovery.config import DiscoveryConfig
from search.stateful.config import StatefulConfig
from search.stateful.scripted import StatefulScientist
from search.stateful.strategy import StatefulDiscovery, build_stateful

LLM = {
    "providers": {"o": {"kind": "scripted"}},
    "models": {"m": {"provider": "o", "model": "m"}},
    "roles": {"code": {"model": "m"}},
}


class Settings:
    def __init__(self, max_nodes: int | None = None) -> None:
        self.budgets = Budgets(wall_clock_s=300, max_nodes=max_nodes)
        self.executor = ExecutorConfig(kind="inprocess", max_in_flight=3)

    def resources_for(self, kind: str) -> Resources:
        return Resources()


def open_run(
    run_dir: Path, df: pd.DataFrame | None = None, fn: Any = None, interactions: int = 3, **switches: Any
) -> tuple[Journal, StatefulDiscovery]:
    run_dir.mkdir(parents=True, exist_ok=True)
    if df is not None:
        df.to_csv(run_dir / "data.csv", index=False)
    journal = Journal.open(run_dir)
    if not journal.log.events:
        journal.record(ev.RunStarted(config={}, metrics=[], stages=["stateful"]))
    provider = ScriptedProvider("o", fn=fn or StatefulScientist())
    llm = build_gateway(LLMConfig.model_validate(LLM), run_dir, None, {}, providers={"o": provider}).client()
    return journal, build_stateful(
        DiscoveryConfig(data=run_dir / "data.csv", interactions=interactions),
        StatefulConfig(**switches),
        0,
        journal,
        llm,
    )


def run(
    run_dir: Path, df: pd.DataFrame | None = None, max_nodes: int | None = None, **switches: Any
) -> tuple[RunOutcome, StatefulDiscovery]:
    journal, strategy = open_run(run_dir, df, **switches)
    return Dispatcher(Settings(max_nodes), journal, strategy, InProcessExecutor(3)).run(), strategy
