"""Idea files, LLM-mode configs and the offline scripted scientist for the agentic search tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from engine.dispatch import RunOutcome
from engine.journal import Journal
from engine.llm.providers.scripted import ScriptedProvider
from engine.node import NodeStatus
from search.agentic.operators.prompts import OPERATOR_TASKS, STAGE_GOALS
from silva import lifecycle as run
from silva.config import RunConfig, load_config
from tests.helpers import load_file, write_config

ROOT = Path(__file__).resolve().parents[2]
SCIENTIST = ROOT / "examples" / "ideas" / "scripted_scientist.py"

IDEA: dict[str, Any] = {
    "name": "noise",
    "title": "Small-loss filtering under label noise",
    "hypothesis": "Dropping the highest-loss samples and retraining a numpy logistic regression helps under "
    "30% noise.",
    "experiments": ["baseline", "filtering", "ablations"],
    "risks": ["hard clean samples look noisy"],
    "metrics": [
        {"name": "val_accuracy", "direction": "maximize", "primary": True},
        {"name": "clean_fraction_kept", "direction": "maximize"},
    ],
}

LLM: dict[str, Any] = {
    "providers": {"offline": {"kind": "scripted"}},
    "models": {
        "sci": {"provider": "offline", "model": "scripted-scientist", "capabilities": {"vision": True}}
    },
    "roles": {r: {"model": "sci", "max_tokens": 4096} for r in ("code", "feedback", "vision", "selection")},
}


@cache
def scientist() -> ModuleType:
    return load_file(SCIENTIST, "scripted_scientist_tests")


def responder(**kw: Any) -> Any:
    return scientist().Responder(**kw)


def context_of(role: str, prompt: str) -> dict[str, str]:
    """What a call is, read back from its prompt: the request's `context` never reaches the wire
    (engine/llm/types.py), so a fake server standing in for the model infers it, as a model would.
    A code proposal's node is a hash of its prompt: what varies its simulated duration."""
    if role == "code":
        stage = next(s for s, goal in STAGE_GOALS.items() if goal in prompt)
        operator = next(o for o, task in OPERATOR_TASKS.items() if "Your task: " + task in prompt)
        node = "p" + hashlib.sha1(prompt.encode()).hexdigest()[:10]
        return {"operator": operator, "stage": stage, "node": node}
    if role == "feedback":
        return {"judge": "run"}
    if role == "selection":
        ids = re.findall(r"^- (\S+) \(", prompt, re.MULTILINE)
        return {"select": "best", "candidates": ",".join(ids)}
    return {}


def idea_file(tmp: Path, name: str = "noise", **overrides: Any) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**IDEA, "name": name, **overrides}))
    return path


def agentic_config(
    tmp: Path, ideas: Sequence[Path | dict[str, Any]] | None = None, **overrides: Any
) -> RunConfig:
    """A small, fast LLM-mode config: in-process executor, no sandbox isolation, numpy experiments."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg: dict[str, Any] = {
        "name": "a",
        "output_dir": str(tmp / "runs"),
        "replicates": 2,
        "stages": {
            "preliminary": {"max_nodes": 4},
            "hyperparameter": {"max_nodes": 3},
            "agenda": {"max_nodes": 3},
            "ablation": {"max_nodes": 2},
        },
        "search": {"num_drafts": 2, "debug_prob": 0.5},
        "budgets": {"wall_clock_s": 300, "node_timeout_s": 30},
        "executor": {"kind": "inprocess", "max_in_flight": 3},
        "sandbox": "none",
        "llm": LLM,
    }
    if ideas is None:
        cfg["idea"] = str(overrides.pop("idea", None) or idea_file(tmp))
    else:
        cfg["ideas"] = [str(i) if isinstance(i, Path) else {**i, "path": str(i["path"])} for i in ideas]
    return load_config(write_config(tmp, cfg, overrides))


def providers(fn: Any) -> dict[str, ScriptedProvider]:
    return {"offline": ScriptedProvider("offline", fn=fn)}


def start(cfg: RunConfig, fn: Any, **kw: Any) -> tuple[RunOutcome, Journal]:
    run_dir, journal = run.create_run(cfg)
    outcome = run.execute(cfg, journal, providers=providers(fn), **kw)
    return outcome, Journal.open(run_dir)


def llm_nodes(j: Journal) -> list[Any]:
    """The search's nodes: speculative work discarded by its stage (docs/engine.md) left out."""
    return [
        n
        for n in j
        if n.kind not in ("replication", "aggregation", "selection", "heldout")
        and n.status != NodeStatus.DISCARDED
    ]
