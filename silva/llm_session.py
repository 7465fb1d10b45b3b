"""The LLM side of one driver session: the gateway (in-process, or the Ray actor for Ray runs)
and the spend read back from the ledger for the dispatcher's budget checks and per-idea budgets.

Imported only in idea mode, from the composition root (silva/lifecycle.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.llm import (
    LEDGER_FILE,
    LLM,
    CallRecord,
    build_gateway,
    resolve_keys,
    take_api_keys,
    validate_llm_config,
)
from engine.llm.config import LLMConfig
from engine.llm.ledger import Ledger, read_records
from engine.llm.probe import ProbeResult
from engine.llm.providers.base import Provider
from engine.llm.providers.scripted import ScriptedProvider, ScriptFn
from silva.config import RunConfig


class LedgerTail:
    """Dollars paid so far, in total and per idea, read incrementally from the gateway's ledger."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LEDGER_FILE
        self._offset = 0
        self._total = 0.0
        self._by_idea: dict[str, float] = defaultdict(float)

    def _update(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written is read next time
        self._offset += len(complete)
        for line in complete.splitlines():
            try:
                rec = CallRecord.model_validate_json(line)
            except ValueError:
                continue
            if not rec.cache_hit:
                self._total += rec.dollars
                self._by_idea[rec.idea or ""] += rec.dollars

    def spent(self) -> float:
        self._update()
        return self._total

    def spent_by(self, idea: str) -> float:
        self._update()
        return self._by_idea.get(idea, 0.0)


@dataclass
class LLMSession:
    client: LLM
    ledger: LedgerTail
    close: Callable[[], None]


def load_function(ref: str) -> ScriptFn:
    """`path/to/file.py:name` or `package.module:name`. A file is loaded without registering a
    module name, so a Ray gateway actor receives the function by value."""
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise ConfigError(f"scripted_fn = {ref!r}: expected `file.py:function` or `module:function`")
    try:
        if where.endswith(".py"):
            spec = importlib.util.spec_from_file_location(f"silva_scripted_{abs(hash(where))}", where)
            if spec is None or spec.loader is None or not Path(where).is_file():
                raise ConfigError(f"scripted_fn = {ref!r}: file {where} not found")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except (ImportError, SyntaxError) as e:
        raise ConfigError(f"scripted_fn = {ref!r}: cannot load: {e}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"scripted_fn = {ref!r}: {attr} is not a function in {where}")
    return fn


def show_progress() -> None:
    """Print one line per step of the LLM calls and compiles of this process (the `silva.progress`
    logger) on stderr, with the time: a command that waits minutes on a slow model shows it is
    working, on a terminal and in a pipe alike."""
    logger = logging.getLogger("silva.progress")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # not twice through the root logger's handler


class _Stderr(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a line is logged, flushing each line."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def check_llm(cfg: RunConfig, run_dir: Path | None = None) -> list[ProbeResult]:
    """Every problem of the LLM config, before any work (LLMConfigError is a ConfigError), and
    one line per model on what the start-of-run probe measured (engine/llm/probe.py). Returns the
    probes, for `record_probes` once the run directory exists. `run_dir`: the run being resumed,
    whose ledger tells which models have answered it before (warned about, not refused, on speed)."""
    assert cfg.llm is not None
    worked = answered(read_records(run_dir / LEDGER_FILE)) if run_dir is not None else set()
    results = probe_llm(cfg.llm, worked=worked)
    if cfg.scripted_fn is not None:
        load_function(cfg.scripted_fn)
    return results


def probe_llm(
    llm: LLMConfig, ledger_dir: Path | None = None, *, worked: Collection[str] = ()
) -> list[ProbeResult]:
    """`validate_llm_config` with the probe's lines printed, and its calls written to the ledger
    in `ledger_dir` when given (`silva ideate`, `silva review`: the command's own ledger)."""
    results = validate_llm_config(llm, os.environ, worked=worked)
    for result in results:
        print(result.line(), flush=True)
    if ledger_dir is not None:
        record_probes(ledger_dir, results)
    return results


def answered(records: Iterable[CallRecord]) -> set[str]:
    """`provider/model id` of every model that answered a call (a probe included) in a ledger."""
    return {
        f"{r.provider}/{r.model}"
        for r in records
        if r.error is None and not r.cache_hit and r.attempts > 0 and r.output_tokens > 0
    }


def record_probes(run_dir: Path, results: list[ProbeResult]) -> None:
    """The probe's calls into the run's LLM ledger (role `probe`, one line per sample): paid like
    any call, so `silva cost` and the dollar budget count them (docs/llm.md, "Start-of-run probe")."""
    ledger = Ledger(run_dir / LEDGER_FILE)
    for result in results:
        for record in result.records():
            ledger.append(record)


def scripted_providers(llm: LLMConfig, scripted_fn: str | None) -> dict[str, Provider]:
    """Scripted providers answered by `scripted_fn` (rules from the config still come first):
    `silva run`, `silva review` and `silva ideate` alike."""
    if scripted_fn is None:
        return {}
    fn = load_function(scripted_fn)
    return {
        name: ScriptedProvider(name, rules=p.rules, fn=fn, default=p.default_response)
        for name, p in llm.providers.items()
        if p.kind == "scripted"
    }


def open_llm(cfg: RunConfig, run_dir: Path, providers: Mapping[str, Provider] | None = None) -> LLMSession:
    """Start the gateway. Call before the executor: on Ray the keys leave this process's
    environment before `ray.init`, so no worker or sandbox inherits them."""
    assert cfg.llm is not None
    chosen = {**scripted_providers(cfg.llm, cfg.scripted_fn), **(providers or {})}
    ledger = LedgerTail(run_dir)
    if cfg.executor.kind == "inprocess":
        gateway = build_gateway(
            cfg.llm, run_dir, cfg.budgets.dollars, resolve_keys(cfg.llm, os.environ), providers=chosen
        )
        return LLMSession(gateway.client(), ledger, gateway.close)
    keys = take_api_keys(cfg.llm, os.environ)
    from actors.gateway import close_gateway_actor, start_gateway_actor
    from actors.ray_executor import connect

    connect(cfg.executor)
    client = start_gateway_actor(cfg.llm, run_dir, cfg.budgets.dollars, keys=keys, providers=chosen or None)
    return LLMSession(client, ledger, lambda: close_gateway_actor(client))
