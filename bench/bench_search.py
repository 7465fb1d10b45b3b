"""Agentic search benchmark: nodes per hour and worker utilization of a four-stage search, per
policy, with the scripted LLM provider and lognormal experiment durations.
Writes bench/results/search.json and prints a table.

Each experiment sleeps a lognormal time (drawn per node) inside real numpy code run through the
sandbox; the scripted provider answers every LLM call after a fixed latency. Utilization =
time jobs held a slot / (worker slots x makespan), as `silva status` counts it (engine/totals.py
`Busy`: run steps, not the think and judge steps that wait on the LLM); what is lost is mostly
the stage barriers (a stage's best is decided only when all its nodes are in) and the driver's own work.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from engine.journal import Journal
from engine.llm.ledger import summarize
from engine.llm.providers.scripted import ScriptedProvider
from silva import lifecycle as run
from silva.config import load_config

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "search.json"
POLICIES = ("best_first", "greedy", "mcts", "evolutionary")
WORKERS = 4
MEDIAN_S, SIGMA = 0.6, 0.7  # experiment duration: lognormal, median 0.6 s
LLM_LATENCY_S = 0.05
STAGES = {
    "preliminary": {"max_nodes": 4},
    "hyperparameter": {"max_nodes": 8},
    "agenda": {"max_nodes": 8},
    "ablation": {"max_nodes": 3},
}


def responder() -> object:
    spec = importlib.util.spec_from_file_location(
        "scripted_scientist", ROOT / "examples" / "ideas" / "scripted_scientist.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Responder(bugs={"n0000": "name_error"}, sleep=(MEDIAN_S, SIGMA), plots=False)


def bench(policy: str, tmp: Path) -> dict[str, object]:
    idea = yaml.safe_load((ROOT / "examples" / "ideas" / "label_noise_asymmetric.yaml").read_text())
    (tmp / "idea.yaml").write_text(yaml.safe_dump(idea))
    cfg_path = tmp / "run.yaml"
    cfg_path.write_text(
        yaml.safe_dump(
            {
                "name": f"bench-{policy}",
                "idea": "idea.yaml",
                "output_dir": str(tmp / "runs"),
                "replicates": 2,
                "stages": STAGES,
                "search": {"policy": policy, "num_drafts": 2},
                "budgets": {"wall_clock_s": 600, "node_timeout_s": 60},
                "executor": {"kind": "inprocess", "max_in_flight": WORKERS},
                "sandbox": "none",
                "llm": {
                    "providers": {"offline": {"kind": "scripted"}},
                    "models": {
                        "m": {"provider": "offline", "model": "scripted", "capabilities": {"vision": True}}
                    },
                    "roles": {r: {"model": "m"} for r in ("code", "feedback", "vision", "selection")},
                },
            }
        )
    )
    cfg = load_config(cfg_path)
    run_dir, journal = run.create_run(cfg)
    provider = ScriptedProvider("offline", fn=responder(), delay_s=LLM_LATENCY_S)  # type: ignore[arg-type]
    start = time.monotonic()
    outcome = run.execute(cfg, journal, providers={"offline": provider})
    makespan = time.monotonic() - start
    j = Journal.open(run_dir)
    busy = j.totals.busy.ended_s  # slot-holding steps only, as `silva status` counts (the run has ended)
    calls = summarize(run_dir)["run"]["calls"]
    return {
        "policy": policy,
        "outcome": outcome.status,
        "nodes": len(j.nodes),
        "buggy": sum(n.status.value == "buggy" for n in j),
        "makespan_s": round(makespan, 2),
        "nodes_per_hour": round(len(j.nodes) / makespan * 3600),
        "utilization": round(busy / (WORKERS * makespan), 3),
        "llm_calls": calls,
        "llm_calls_per_node": round(calls / len(j.nodes), 2),
    }


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for policy in POLICIES:
            (Path(tmp) / policy).mkdir()
            rows.append(bench(policy, Path(tmp) / policy))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    setup = {
        "workers": WORKERS,
        "duration": f"lognormal(median {MEDIAN_S} s, sigma {SIGMA})",
        "llm_latency_s": LLM_LATENCY_S,
        "stages": STAGES,
        "replicates": 2,
        "executor": "inprocess",
        "sandbox": "none",
    }
    RESULTS.write_text(json.dumps({"setup": setup, "results": rows}, indent=2))
    print(
        f"four-stage agentic search, {WORKERS} workers, experiment time lognormal(median {MEDIAN_S} s, sigma "
        f"{SIGMA})"
    )
    print(f"{'policy':<13}{'nodes':>6}{'buggy':>6}{'makespan s':>11}{'nodes/h':>9}{'util':>7}{'LLM/node':>9}")
    for r in rows:
        print(
            f"{r['policy']:<13}{r['nodes']:>6}{r['buggy']:>6}{r['makespan_s']:>11}{r['nodes_per_hour']:>9}"
            f"{r['utilization']:>7.0%}{r['llm_calls_per_node']:>9}"
        )


if __name__ == "__main__":
    main()
