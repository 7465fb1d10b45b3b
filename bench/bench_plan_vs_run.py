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

`--spread IDEAS:RATIO --runs K`: how far apart independent runs of one config are, and so how
close any plan can be to "an independent run". K real runs of the config, each with a latency
seed of its own (1 to K), two at a time as the pairs run; for each, the median of SEEDS plans
`--from` it and its replay. Reports the runs' spread (min, median, max, coefficient of
variation), every pairwise |A-B|/B, each run's plan median against every other run, and the
bound: the largest share of the K runs that any single figure is within 15% of. Writes
bench/results/plan_spread.json (a row per setting); runs already kept under --keep are not run
again, so `--spread 1:1 --runs 8` after `--runs 6` makes two more, and with the runs all kept it
plans them again. `--tag NAME` keeps the row beside the setting's others (another set of runs,
under another --keep).

    .venv/bin/python bench/bench_plan_vs_run.py --spread 1:1 --runs 8 --keep /tmp/pvs
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
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
SPREAD = ROOT / "bench" / "results" / "plan_spread.json"
SLOTS = 4
SEEDS = 5
WITHIN = 0.15  # the target: a plan within 15% of an independent run
FIGURES = ("wall_s", "nodes", "utilization")


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
    return {
        "wall_s": r.wall_s,
        "nodes": r.nodes,
        "utilization": r.utilization,
        "outcome": r.outcome,
        "nodes_by_kind": r.nodes_by_kind,
    }


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


def spread_runs(keep: Path, ideas: int, ratio: float, k: int) -> list[dict[str, Any]]:
    """K real runs of the setting, run I with latency seed I + 1, two at a time (each pair sees
    the same load, as A and B do); a run already kept under `keep` is not run again."""
    where = keep / f"{ideas}x{ratio:g}" / "spread"
    outs = [where / f"R{i}" for i in range(k)]
    todo = [i for i, out in enumerate(outs) if not (out / "figures.json").is_file()]
    for pair in (todo[i : i + 2] for i in range(0, len(todo), 2)):
        procs = []
        for i in pair:
            if outs[i].exists():  # a run cut short: its directory would hold two runs
                shutil.rmtree(outs[i])
            cmd = [
                sys.executable,
                __file__,
                "--one",
                str(outs[i]),
                "--ideas",
                str(ideas),
                "--ratio",
                str(ratio),
            ]
            procs.append(subprocess.Popen([*cmd, "--latency-seed", str(i + 1)]))
        print(f"runs {pair} of {ideas}:{ratio:g} started {time.strftime('%H:%M:%S')}", flush=True)
        for p in procs:
            if p.wait() != 0:
                raise SystemExit(f"a real run failed (exit {p.returncode})")
    runs = []
    for i, out in enumerate(outs):
        run = json.loads((out / "figures.json").read_text())
        runs.append(
            as_planned(run) | {"latency_seed": i + 1, "nodes_by_kind": kept_by_kind(Path(run["run_dir"]))}
        )
    return runs


def kept_by_kind(run_dir: Path) -> dict[str, int]:
    """A run's kept nodes by kind, as a plan's report counts them."""
    j = Journal.open(run_dir, read_only=True)
    kinds = Counter(n.kind for n in j if n.is_finished and n.status.value != "discarded")
    return dict(sorted(kinds.items()))


def spread(values: list[float]) -> dict[str, float]:
    """min, median, max and the coefficient of variation (sample standard deviation / mean)."""
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 and mean else 0.0
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
        "cv": round(cv, 3),
    }


def within(p: float, b: float) -> bool:
    """|P - B| / B <= 15% (a hair of slack for the float that lands on the edge)."""
    return abs(p - b) <= WITHIN * b + 1e-9


def bound(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """The largest share of `runs` any single plan is within 15% of, on every figure of `keys`
    at once, and such a plan. Within 15% of B is P in [0.85 B, 1.15 B], so a P covers the runs
    with B in [P / 1.15, P / 0.85]: a window sliding over each figure's sorted values, whose
    lower edge can sit on a run's value (P = 1.15 x that value) without covering fewer."""
    candidates = [sorted({(1 + WITHIN) * r[k] for r in runs}) for k in keys]
    best: tuple[int, tuple[float, ...]] = (0, ())
    for p in itertools.product(*candidates):
        n = sum(all(within(pk, r[k]) for pk, k in zip(p, keys, strict=True)) for r in runs)
        if n > best[0]:
            best = (n, p)
    return {
        "share": round(best[0] / len(runs), 3),
        "runs": best[0],
        "of": len(runs),
        "at": {k: round(v, 3) for k, v in zip(keys, best[1], strict=True)},
    }


def _share(ok: list[bool]) -> float:
    return round(sum(ok) / len(ok), 3)


def _plans_of(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run planned `--from` itself at SEEDS seeds (with their median) and replayed."""
    plans: list[dict[str, Any]] = []
    for run in runs:
        seeds = [planned(run, False, seed) for seed in range(SEEDS)]
        replay = planned(run, True)
        med = {f: statistics.median(p[f] for p in seeds) for f in FIGURES}
        plans.append({"seeds": seeds, "median": med, "replay": replay})
        print(f"planned from R{len(plans) - 1}: median {med}", flush=True)
    return plans


def _same_pair(runs: list[dict[str, Any]], plans: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of a pair ran at once, at the same load; other pairs at another. A vs B as the
    pairs mode measures it, and each run's plan median against its partner."""
    firsts = range(0, len(runs) - 1, 2)
    return {
        f: {
            "a_vs_b": [round(runs[i][f] / runs[i + 1][f] - 1, 3) for i in firsts],
            "plan_from_a_vs_b": [round(plans[i]["median"][f] / runs[i + 1][f] - 1, 3) for i in firsts],
            "plan_from_b_vs_a": [round(plans[i + 1]["median"][f] / runs[i][f] - 1, 3) for i in firsts],
        }
        for f in FIGURES
    }


def _plan_entry(i: int, pl: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's plans: their median, the replay, and how many other runs the median covers."""
    others = [j for j in range(len(runs)) if j != i]
    return {
        "from": f"R{i}",
        "median_of_seeds": {f: round(v, 3) for f, v in pl["median"].items()},
        "seeds": pl["seeds"],
        "replay": pl["replay"],
        "replay_vs_own_run": delta(pl["replay"], runs[i]),
        "median_vs_own_run": delta(pl["median"], runs[i]),
        "coverage_of_others": {
            f: _share([within(pl["median"][f], runs[j][f]) for j in others]) for f in FIGURES
        }
        | {"all_three": _share([all(within(pl["median"][f], runs[j][f]) for f in FIGURES) for j in others])},
    }


def _summary(values: dict[str, list[float]], signed: bool) -> dict[str, Any]:
    """Per figure: the values, their median and extremes, and the share within WITHIN."""
    out = {}
    for f, v in values.items():
        ends = {"min": min(v), "max": max(v)} if signed else {"max": max(v)}
        out[f] = {"values": v, "median": statistics.median(v), **ends}
        out[f]["share_within"] = _share([abs(x) <= WITHIN + (1e-9 if signed else 0) for x in v])
    return out


def spread_row(ideas: int, ratio: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' spread, each run's plans against the others, and the bound (module docstring)."""
    plans = _plans_of(runs)
    pairs = [(i, j) for i in range(len(runs)) for j in range(len(runs)) if i != j]
    pairwise = {f: [round(abs(runs[i][f] - runs[j][f]) / runs[j][f], 3) for i, j in pairs] for f in FIGURES}
    others = {  # each run's plan median against every other run: signed, P / B - 1
        f: [round(plans[i]["median"][f] / runs[j][f] - 1, 3) for i, j in pairs] for f in FIGURES
    }
    runs_median = {f: statistics.median(r[f] for r in runs) for f in FIGURES}
    pooled = {f: statistics.median(p[f] for pl in plans for p in pl["seeds"]) for f in FIGURES}
    medians = {f: statistics.median(pl["median"][f] for pl in plans) for f in FIGURES}
    return {
        "ideas": ideas,
        "ratio": ratio,
        "runs": len(runs),
        "plan_seeds": SEEDS,
        "load_avg": [r["load_avg"] for r in runs],
        "load_avg_max": max(r["load_avg_max"] for r in runs),
        "run_figures": [
            {f: r[f] for f in (*FIGURES, "latency_seed", "nodes_by_kind", "run_dir")} for r in runs
        ],
        "runs_spread": {f: spread([r[f] for r in runs]) for f in FIGURES},
        "pairwise_abs": _summary(pairwise, signed=False),
        "pairwise_within_all_three": _share(
            [all(within(runs[i][f], runs[j][f]) for f in FIGURES) for i, j in pairs]
        ),
        "same_pair": _same_pair(runs, plans),
        "bound": {f: bound(runs, (f,)) for f in FIGURES} | {"all_three": bound(runs, FIGURES)},
        "plans": [_plan_entry(i, pl, runs) for i, pl in enumerate(plans)],
        "plan_median_vs_other_runs": _summary(others, signed=True),
        "plan_median_vs_other_runs_all_three": _share(
            [all(within(plans[i]["median"][f], runs[j][f]) for f in FIGURES) for i, j in pairs]
        ),
        "runs_median": {f: round(v, 3) for f, v in runs_median.items()},
        "plans_pooled_median": {f: round(v, 3) for f, v in pooled.items()},
        "plans_median_of_medians": {f: round(v, 3) for f, v in medians.items()},
        "pooled_vs_runs_median": delta(pooled, runs_median),
        "medians_vs_runs_median": delta(medians, runs_median),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def save_spread(row: dict[str, Any]) -> None:
    """Merge into plan_spread.json: a row replaces the one of its (ideas, ratio, tag)."""
    old = json.loads(SPREAD.read_text()).get("rows", []) if SPREAD.is_file() else []
    merged = {(r["ideas"], r["ratio"], r.get("tag", "")): r for r in old}
    merged[(row["ideas"], row["ratio"], row.get("tag", ""))] = row
    body = {
        "slots": SLOTS,
        "within": WITHIN,
        "rows": sorted(merged.values(), key=lambda r: (r["ideas"], r["ratio"], r.get("tag", ""))),
    }
    SPREAD.write_text(json.dumps(body, indent=2))


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
    ap.add_argument("--spread", type=forest_pair, help="K independent runs of IDEAS:RATIO (module docstring)")
    ap.add_argument("--runs", type=int, default=8, help="K, with --spread")
    ap.add_argument("--tag", default="", help="with --spread: a name for another set of runs of the setting")
    args = ap.parse_args()
    if args.one is not None:
        real_run(args.one, args.ideas, args.ratio, args.latency_seed)
        return
    if args.spread is not None:
        ideas, ratio = args.spread
        row = spread_row(ideas, ratio, spread_runs(args.keep, ideas, ratio, args.runs))
        save_spread(({"tag": args.tag} if args.tag else {}) | row)
        keys = ("runs_spread", "bound", "plan_median_vs_other_runs", "runs_median", "plans_pooled_median")
        print(json.dumps({k: row[k] for k in keys}, indent=1), flush=True)
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
