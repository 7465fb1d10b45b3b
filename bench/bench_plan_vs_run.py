"""Does a plan `--from` a run agree with the run, and with a second, independent run of the same
config (docs/plan.md, "How close")? Writes bench/results/plan_vs_run.json.

For each IDEAS:RATIO (bench_pipeline's agentic workload on 4 slots, the pipeline on, LLM latency
RATIO x the experiments' saved median): two real runs of the same config, A and B, at once (two
processes, so they see the same machine load; each has its own fake LLM server, whose latencies
are the world's, not the config's: drawn from seeds of their own), then `silva plan --from A`
and the same plan in replay mode (each node takes A's own durations, latencies and outcomes:
what still differs from A is the plan's model, not chance). Wall time, kept nodes (discarded
speculation left out, as the plan counts them) and utilization (experiments' own time / slots
x wall; the experiments of discarded nodes that ended count on both sides) of each, and the
deltas plan vs A, plan vs B and A vs B (this machine's own spread).
Runs are kept under --keep for `--read`.

    .venv/bin/python bench/bench_plan_vs_run.py --pairs 1:0 1:1 1:4 4:0 4:1 4:4 --keep /tmp/pvr
    .venv/bin/python bench/bench_plan_vs_run.py --read --keep /tmp/pvr --pairs 4:1   (plans again, no runs)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).parent), str(ROOT)]

from bench_pipeline import agentic_run, fake_llm, forest_pair, load_sampled, saved_median  # noqa: E402

from engine.events import AttemptFinished, AttemptStarted, StepFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from search.agentic.operators.job import Ran  # noqa: E402
from silva.plan import plan  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "plan_vs_run.json"
SLOTS = 4
SEEDS = 5


def real_run(out: Path, ideas: int, ratio: float, latency_seed: int) -> dict[str, Any]:
    """One real run of the setting in `out` (kept): its figures, as the plan reports them."""
    out.mkdir(parents=True, exist_ok=True)
    with FakeLLMServer() as server, load_sampled() as load:
        fake_llm(server, ratio * saved_median(SLOTS), seed=latency_seed)
        row = agentic_run(out, server.url, SLOTS, True, seed=0, ideas=ideas)
    run_dir = next((out / "runs").iterdir())
    figures = {
        "run_dir": str(run_dir),
        "config": str(out / "run.yaml"),
        "outcome": row["outcome"],
        "wall_s": row["makespan_s"],
        "nodes": row["kept_nodes"],
        "nodes_with_discarded": row["nodes"],
        "utilization": row["utilization"],
        "load_avg": round(sum(load) / len(load), 1),
        "load_avg_max": round(max(load), 1),
    }
    (out / "figures.json").write_text(json.dumps(figures, indent=2))
    return figures


def steps(run_dir: Path) -> dict[str, Any]:
    """Where a real run's time goes per step, against what a plan models: each think and judge
    step's span (the driver's submission to its result journaled) beside its node's LLM latency,
    a run step's span beside the slot time its result says it held, and the other jobs' spans."""
    j = Journal.open(run_dir, read_only=True)
    latency: dict[tuple[str, str], float] = {}
    for r in read_records(run_dir / LEDGER_FILE):
        if r.node_id and r.attempts and not r.cache_hit:
            latency[(r.node_id, r.role)] = latency.get((r.node_id, r.role), 0.0) + r.latency_s
    began: dict[tuple[str, int], tuple[float, str]] = {}
    spans: dict[str, list[float]] = {}
    for e in j.log.read(AttemptStarted, StepFinished, AttemptFinished):
        key = (getattr(e, "node_id", ""), getattr(e, "attempt", 0))
        if isinstance(e, AttemptStarted):
            began[key] = (e.ts, e.step or j.nodes[e.node_id].kind)
            continue
        if key not in began:
            continue
        t0, step = began.pop(key)
        assert isinstance(e, StepFinished | AttemptFinished)
        res = e.result
        spans.setdefault(step, []).append(e.ts - t0)
        role = {"think": "code", "judge": "feedback", "selection": "selection"}.get(step)
        if role is not None:
            spans.setdefault(f"{step}_llm", []).append(latency.get((key[0], role), 0.0))
        if res.finished_at and res.started_at:
            spans.setdefault(f"{step}_held", []).append(res.finished_at - res.started_at)
    return {k: {"n": len(v), "mean_s": round(sum(v) / len(v), 3)} for k, v in sorted(spans.items())}


def as_planned(run: dict[str, Any]) -> dict[str, Any]:
    """A run's figures with its utilization counted as a plan counts it: every experiment that
    ended, a node's the run discarded after its run step included (its slot was busy; its
    attempt never finished, so bench_pipeline's figure, from finished nodes' executions, leaves
    it out: 6.7 s of the one-idea run's at 1x, 4% of its utilization). `utilization_finished`:
    bench_pipeline's."""
    j = Journal.open(Path(run["run_dir"]), read_only=True)
    busy = sum(n.execution.wall_s for n in j if n.execution is not None and n.execution.wall_s > 0)
    cut = (n.steps.get("run") for n in j if n.execution is None)
    busy += sum(r.execution.wall_s for r in cut if isinstance(r, Ran))
    finished = run.get("utilization_finished", run["utilization"])
    return run | {"utilization": round(busy / (SLOTS * run["wall_s"]), 3), "utilization_finished": finished}


def planned(a: dict[str, Any], replay: bool, seed: int = 0) -> dict[str, Any]:
    """`silva plan --from A` of A's own config, or its replay of A."""
    r = plan(Path(a["config"]), from_dir=Path(a["run_dir"]), seed=seed, replay=replay)
    return {"wall_s": r.wall_s, "nodes": r.nodes, "utilization": r.utilization, "outcome": r.outcome}


def median_plan(a: dict[str, Any], seeds: int) -> dict[str, Any]:
    """The median of each figure over the plans of seeds 0 to `seeds` - 1: one plan's draws of
    a one-idea chain (which replicates fail, where a stage ends) move it by 20-40%."""
    plans = [planned(a, False, seed) for seed in range(seeds)]
    return {k: statistics.median(p[k] for p in plans) for k in ("wall_s", "nodes", "utilization")}


def delta(x: dict[str, Any], y: dict[str, Any]) -> dict[str, float]:
    """x against y: relative differences of wall time, nodes and utilization."""
    return {k: round(x[k] / y[k] - 1, 3) for k in ("wall_s", "nodes", "utilization") if y[k]}


def both_runs(keep: Path, ideas: int, ratio: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs A and B of the setting at once, each in a process of its own."""
    procs = []
    for name, seed in (("A", 1), ("B", 2)):
        out = keep / f"{ideas}x{ratio:g}" / name
        cmd = [sys.executable, __file__, "--one", str(out), "--ideas", str(ideas), "--ratio", str(ratio)]
        procs.append((out, subprocess.Popen([*cmd, "--latency-seed", str(seed)])))
    for _, p in procs:
        if p.wait() != 0:
            raise SystemExit(f"a real run failed (exit {p.returncode})")
    a, b = (json.loads((out / "figures.json").read_text()) for out, _ in procs)
    return a, b


def row_of(ideas: int, ratio: float, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    a, b = as_planned(a), as_planned(b)
    p, replay, med = planned(a, False), planned(a, True), median_plan(a, SEEDS)
    return {
        "ideas": ideas,
        "ratio": ratio,
        "run_a": a,
        "run_b": b,
        "plan": p,
        "replay": replay,
        f"plan_median_of_{SEEDS}_seeds": med,
        "median_plan_vs_b": delta(med, b),
        "plan_vs_a": delta(p, a),
        "plan_vs_b": delta(p, b),
        "a_vs_b": delta(a, b),
        "replay_vs_a": delta(replay, a),
        "nodes_in_a": len(Journal.open(Path(a["run_dir"]), read_only=True).nodes),
        # What a plan of each step's calls alone missed: the steps' spans beside their calls.
        "steps_in_a": steps(Path(a["run_dir"])),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def save(rows: list[dict[str, Any]]) -> None:
    """Merge into the results file: a row replaces the one of its (ideas, ratio)."""
    old = json.loads(RESULTS.read_text()).get("rows", []) if RESULTS.is_file() else []
    merged = {(r["ideas"], r["ratio"]): r for r in old} | {(r["ideas"], r["ratio"]): r for r in rows}
    RESULTS.write_text(
        json.dumps(
            {"slots": SLOTS, "rows": sorted(merged.values(), key=lambda r: (r["ideas"], r["ratio"]))},
            indent=2,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", nargs="+", type=forest_pair, default=[(1, 0.0), (1, 1.0), (4, 1.0)])
    ap.add_argument("--keep", type=Path, default=Path("/tmp/plan_vs_run"))
    ap.add_argument("--read", action="store_true", help="plan the runs already kept, run none")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # one real run, in a child process
    ap.add_argument("--ideas", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--ratio", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--latency-seed", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        real_run(args.one, args.ideas, args.ratio, args.latency_seed)
        return
    rows = []
    for ideas, ratio in args.pairs:
        where = args.keep / f"{ideas}x{ratio:g}"
        if args.read:
            a, b = (json.loads((where / n / "figures.json").read_text()) for n in ("A", "B"))
        else:
            a, b = both_runs(args.keep, ideas, ratio)
        rows.append(row_of(ideas, ratio, a, b))
        save(rows)
        print(
            json.dumps(
                {
                    k: rows[-1][k]
                    for k in (
                        "ideas",
                        "ratio",
                        "plan_vs_a",
                        "plan_vs_b",
                        "a_vs_b",
                        "replay_vs_a",
                        "median_plan_vs_b",
                    )
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
