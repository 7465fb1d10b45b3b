"""`silva bench autobench`: play the Auto-Bench oracles with the ideal, random, scripted and LLM
agents as nodes on the engine (parallel, journaled, resumable, under budgets) and print the table.

This module is also the composition root of a bench run: it picks the executor and starts the
LLM gateways (one offline gateway for the scripted agent, one for a configured `llm:`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from engine.config import format_validation_error, load_yaml
from engine.dispatch import Dispatcher, RunOutcome
from engine.errors import ConfigError
from engine.events import RunStarted, SessionStarted
from engine.journal import EVENTS_FILE, Journal
from search.autobench.config import AutoBenchConfig
from silva.signals import EXIT_CODES as SIGNAL_EXIT_CODES

if TYPE_CHECKING:
    from engine.executor import Executor
    from engine.llm import LLM

CONFIG_SNAPSHOT = "config.yaml"
SUMMARY_FILE = "summary.json"
# As `silva run`'s (docs/cli.md, "Exit codes"): 3 stopped by a budget, 4 the search could not go on.
EXIT_CODES = {"finished": 0, "budget": 3, "stuck": 4, "interrupted": 130}
SCRIPTED_LLM: dict[str, Any] = {
    "providers": {"offline": {"kind": "scripted"}},
    "models": {"autobench-scripted": {"provider": "offline", "model": "autobench-scripted"}},
    "roles": {"code": {"model": "autobench-scripted", "temperature": 0.0, "max_tokens": 4096}},
}

HEADERS = {
    "episodes": "runs",
    "success": "success",
    "cycles_to_success": "cycles→ok",
    "interventions": "interv",
    "invalid_rate": "invalid",
    "reachability_similarity": "reach sim",
    "exact_adjacency": "exact adj",
    "edge_f1": "edge F1",
    "integration_exact": "integ exact",
    "integration_accuracy": "integ acc",
    "length": "T",
}

bench_app = typer.Typer(help="Benchmarks that run on the engine.", no_args_is_help=True)


def load_autobench_config(path: Path | None, overrides: dict[str, Any]) -> AutoBenchConfig:
    data: Any = load_yaml(path) if path is not None else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of autobench settings at the top level")
    data = {**data, **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return AutoBenchConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(str(path or "silva bench autobench"), e)) from None


def _gateways(cfg: AutoBenchConfig, run_dir: Path) -> tuple[dict[str, LLM], list[Any]]:
    """LLM clients per LLM agent, and what to close at the end."""
    from engine.llm import LLMConfig, build_gateway, resolve_keys, take_api_keys, validate_llm_config
    from engine.llm.providers.scripted import ScriptedProvider
    from search.autobench.scripted import ScriptedScientist

    wanted: dict[str, tuple[LLMConfig, Path, dict[str, Any]]] = {}
    if "scripted" in cfg.agents:
        fn = ScriptedScientist(memory=cfg.memory, slip=cfg.slip)
        wanted["scripted"] = (
            LLMConfig.model_validate(SCRIPTED_LLM),
            run_dir / "scripted",
            {"offline": ScriptedProvider("offline", fn=fn)},
        )
    if "llm" in cfg.agents:
        assert cfg.llm is not None  # the config refuses agent 'llm' without it
        validate_llm_config(cfg.llm, os.environ)
        wanted["llm"] = (cfg.llm, run_dir, {})
    clients: dict[str, LLM] = {}
    closers: list[Any] = []
    for agent, (llm_cfg, where, providers) in wanted.items():
        where.mkdir(parents=True, exist_ok=True)
        if cfg.executor.kind == "inprocess":
            gateway = build_gateway(
                llm_cfg, where, cfg.budgets.dollars, resolve_keys(llm_cfg, os.environ), providers=providers
            )
            clients[agent] = gateway.client()
            closers.append(gateway.close)
        else:  # keys leave this process's environment before Ray starts its workers
            from actors.gateway import start_gateway_actor
            from actors.ray_executor import connect

            keys = take_api_keys(llm_cfg, os.environ)
            connect(cfg.executor)
            clients[agent] = start_gateway_actor(
                llm_cfg, where, cfg.budgets.dollars, keys=keys, providers=providers or None
            )
    return clients, closers


def _executor(cfg: AutoBenchConfig) -> Executor:
    if cfg.executor.kind == "inprocess":
        from engine.executor import InProcessExecutor

        return InProcessExecutor(cfg.executor.max_in_flight or os.cpu_count() or 1)
    from actors.ray_executor import RayExecutor

    return RayExecutor(cfg.executor)


def create_run(cfg: AutoBenchConfig) -> tuple[Path, Journal]:
    from search.autobench.config import METRICS
    from search.autobench.strategy import STAGE

    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir, k = cfg.output_dir.resolve() / f"{cfg.name}-{stamp}", 1
    while run_dir.exists():
        k += 1
        run_dir = cfg.output_dir.resolve() / f"{cfg.name}-{stamp}-{k}"
    run_dir.mkdir(parents=True)
    (run_dir / CONFIG_SNAPSHOT).write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    journal = Journal.open(run_dir)
    journal.record(
        RunStarted(
            config=cfg.model_dump(mode="json"),
            metrics=[m.model_dump() for m in METRICS],
            stages=[STAGE],
            mode="autobench",
        )
    )
    return run_dir, journal


def open_run(run_dir: Path) -> tuple[AutoBenchConfig, Journal]:
    if not (run_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"{run_dir}: not a bench run directory (no {EVENTS_FILE}); pass the directory printed at start"
        )
    return load_autobench_config(run_dir / CONFIG_SNAPSHOT, {}), Journal.open(run_dir)


def execute(
    cfg: AutoBenchConfig, journal: Journal, run_dir: Path, executor: Executor | None = None
) -> RunOutcome:
    """Play (or continue) every task of the config; write the summary table next to the journal."""
    from search.autobench.strategy import AutoBenchStrategy
    from silva.llm_session import LedgerTail

    journal.record(SessionStarted(resumed=len(journal.sessions) > 0))
    clients, closers = _gateways(cfg, run_dir)
    try:
        strategy = AutoBenchStrategy(cfg, journal, run_dir, clients)
        executor = executor or _executor(cfg)
        try:
            outcome = Dispatcher(cfg, journal, strategy, executor, spent_usd=LedgerTail(run_dir).spent).run()
        finally:
            executor.shutdown()
    finally:
        for close in closers:
            close()
    write_summary(journal, run_dir)
    return outcome


def write_summary(journal: Journal, run_dir: Path) -> dict[str, Any]:
    from search.autobench.summary import agent_totals, rows

    table = rows(journal)
    summary = {"rows": table, "agents": agent_totals(table)}
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=1))
    return summary


def print_table(console: Console, summary: dict[str, Any]) -> None:
    for task in ("episode", "tracking"):
        mine = [r for r in summary["rows"] if r["task"] == task]
        if not mine:
            continue
        cols = [c for c in dict.fromkeys(c for r in mine for c in r) if c != "task"]
        table = Table(title=f"Auto-Bench {task}s (means over seeded graphs)")
        for c in cols:
            table.add_column(HEADERS.get(c, c), justify="left" if c in ("env", "agent") else "right")
        for r in mine:
            table.add_row(
                *[
                    "" if r.get(c) is None else (f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]))
                    for c in cols
                ]
            )
        console.print(table)


def autobench(
    env: list[str] = typer.Option([], "--env", help="chemistry or social (repeatable; default chemistry)"),
    n: list[int] = typer.Option([], "--n", help="graph sizes (repeatable; default 3 5 7 10 15)"),
    agent: list[str] = typer.Option([], "--agent", help="ideal, random, scripted, llm (repeatable)"),
    graphs: int | None = typer.Option(None, "--graphs", help="seeded graphs per (env, n)"),
    seed: int | None = typer.Option(None, "--seed", help="first graph seed"),
    tracking: list[int] = typer.Option([], "--tracking", help="long-trajectory task lengths (repeatable)"),
    plain_redraws: bool = typer.Option(
        False, "--plain-redraws", help="chemistry: re-draws may keep the colour"
    ),
    config: Path | None = typer.Option(
        None, "--config", help="bench config YAML (with `llm:` for the llm agent)"
    ),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="where the run directory goes"),
    resume: Path | None = typer.Option(None, "--resume", help="continue a stopped bench run"),
) -> int:
    """Play the Auto-Bench oracles; print success rate and cycles by n for every agent."""
    console = Console()
    if resume is not None:
        cfg, journal = open_run(resume)
        run_dir = resume
        console.print(f"resuming {run_dir}", highlight=False)
    else:
        cfg = load_autobench_config(
            config,
            {
                "envs": env or None,
                "ns": n or None,
                "agents": agent or None,
                "graphs": graphs,
                "seed": seed,
                "tracking_lengths": tracking or None,
                "forced_change": False if plain_redraws else None,
                "output_dir": output_dir,
            },
        )
        run_dir, journal = create_run(cfg)
        console.print(f"run directory: {run_dir}", highlight=False)
    outcome = execute(cfg, journal, run_dir)
    print_table(console, json.loads((run_dir / SUMMARY_FILE).read_text()))
    console.print(f"[bold]{outcome.status}[/bold]: {outcome.message}")
    if outcome.status != "finished":
        console.print(f"continue with: silva bench autobench --resume {run_dir}", highlight=False)
    return SIGNAL_EXIT_CODES.get(outcome.signal or "", EXIT_CODES[outcome.status])


bench_app.command("autobench")(autobench)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
