"""Compute-budget benchmark: fair vs successive halving (rungs at stage ends, and with rungs
inside stages too) vs bandit over a forest of 32 template ideas at a fixed GPU-hour budget.
Writes bench/results/budgets.json.

Everything but the experiments is real: `silva.lifecycle.execute` with the journal, the compute
meter, the template forest, its stage manager and proposers, and the allocation policy. The
executor is simulated with no processes: a virtual clock where each experiment takes a lognormal
number of hours on one GPU, and the metric is a known function of the idea and its settings
plus Gaussian noise. Ideas differ in quality: most are hopeless (tuning and the method barely
help), some are medium, a few are good, one is best.

Reported per policy over seeds: the true (noise-free) quality of the forest's incumbent (the node
with the best observed metric) at the end; the regret against spending the budget on the best
idea alone; and the GPU-hours each policy needed to match fair's final incumbent, as a fraction
of the budget (median with a bootstrap 95% interval over seeds).
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import yaml

from engine.attempt import ExperimentJob
from engine.events import AllocationDecided, AttemptFinished, ComputeUsed, Event, NodeCreated
from engine.node import MetricValue
from silva import lifecycle
from silva.config import load_config
from tests.budgets.support import VirtualClockExecutor

RESULTS = Path(__file__).parent / "results" / "budgets.json"
IDEAS = 32
SEEDS = 10
SLOTS = 32
BUDGET_GPU_H = 450.0
MEDIAN_H, SIGMA = 1.0, 0.5  # experiment duration on one GPU: lognormal
NOISE = 0.01
# name -> the run's `allocation:` section. Successive halving with the rungs (stage
# ends), with rungs inside stages (geometric), and with both; with the progress score
# (the gain over each idea's own baseline) instead of the template mode's (the best metric so
# far); then, as a sensitivity check on the same seeds (policy settings, not the workload),
# geometric rungs with eta 2 and with the first rung after two search nodes.
SH = "successive_halving"
POLICIES: dict[str, dict[str, Any]] = {
    "fair": {"policy": "fair"},
    SH: {"policy": SH, "rungs": "stage_ends"},
    f"{SH}_geometric": {"policy": SH, "rungs": "geometric"},
    f"{SH}_geometric_and_stage_ends": {"policy": SH, "rungs": "geometric_and_stage_ends"},
    f"{SH}_best_over_baseline": {"policy": SH, "rungs": "stage_ends", "progress": "best_over_baseline"},
    f"{SH}_geometric_best_over_baseline": {
        "policy": SH,
        "rungs": "geometric",
        "progress": "best_over_baseline",
    },
    "bandit": {"policy": "bandit"},
    f"{SH}_geometric_eta2": {"policy": SH, "rungs": "geometric", "eta": 2},
    f"{SH}_geometric_min_rung_nodes2": {"policy": SH, "rungs": "geometric", "min_rung_nodes": 2},
}
TARGETS = tuple(p for p in POLICIES if p.startswith(SH))
# (how many ideas, tuning gain, method bonus): the idea's quality
GROUPS = ((22, 0.01, 0.0), (6, 0.08, 0.02), (3, 0.16, 0.05), (1, 0.2, 0.08))

TEMPLATE = {
    "name": "sim",
    "command": ["{python}", "experiment.py"],
    "metrics": [{"name": "score", "direction": "maximize", "primary": True}],
    "hyperparameters": {
        "x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
        "y": {"type": "choice", "values": [0, 1, 2], "default": 1},
    },
    "method": {"name": "method", "param": "method"},
    "ablations": [{"name": "no_aug", "param": "ab"}],
}


def ideas(seed: int) -> list[dict[str, Any]]:
    """The variants: each with its quality (gain, bonus) and its own optimum (x*, y*)."""
    rng = np.random.default_rng(1000 + seed)
    out = []
    qualities = [(g, b) for n, g, b in GROUPS for _ in range(n)]
    order = rng.permutation(len(qualities))  # the best idea is not always first
    for k, i in enumerate(order):
        gain, bonus = qualities[i]
        out.append(
            {
                "name": f"idea{k:02d}",
                "fixed": {
                    "gain": gain,
                    "bonus": bonus,
                    "x_star": float(rng.uniform(0.1, 0.9)),
                    "y_star": int(rng.integers(0, 3)),
                },
            }
        )
    return out


def true_quality(p: dict[str, Any]) -> float:
    tune = 1.0 - ((p["x"] - p["x_star"]) / 0.5) ** 2 - 0.5 * (p["y"] != p["y_star"])
    return 0.5 + p["gain"] * tune + (p["bonus"] if p["method"] else 0.0) - (0.01 if p["ab"] else 0.0)


class SimExecutor(VirtualClockExecutor):
    """Experiments take lognormal hours; they score the idea's true quality plus noise."""

    support_s = 36.0  # 0.01 h

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def duration_s(self, job: ExperimentJob) -> float:
        return float(self.rng.lognormal(math.log(MEDIAN_H), SIGMA)) * 3600

    def metrics(self, job: ExperimentJob) -> list[MetricValue]:
        score = true_quality(job.params) + float(self.rng.normal(0, NOISE))
        return [MetricValue(name="score", value=score, direction="maximize")]


def config(root: Path, seed: int, policy: str, variants: list[dict[str, Any]], budget: float) -> Path:
    """The run config of `policy`, a name in POLICIES."""
    tpl = root / "template"
    tpl.mkdir(parents=True, exist_ok=True)
    (tpl / "experiment.py").write_text("raise SystemExit('the benchmark never runs experiments')\n")
    (tpl / "template.yaml").write_text(yaml.safe_dump(TEMPLATE))
    cfg = {
        "name": f"{policy}-{seed}",
        "template": str(tpl),
        "output_dir": str(root / "runs"),
        "seed": seed,
        "variants": variants,
        "allocation": POLICIES[policy],
        "replicates": 1,
        "proposer": "sobol",
        "stages": {
            "preliminary": {"max_nodes": 1},
            "hyperparameter": {"max_nodes": 1},
            "agenda": {"max_nodes": 14},
            "ablation": {"max_nodes": 1},
        },
        "budgets": {"wall_clock_s": None, "gpu_hours": budget},
        "resources": {"default": {"num_cpus": 4, "num_gpus": 1}},
        "executor": {"kind": "inprocess", "max_in_flight": SLOTS},
        "sandbox": "none",
    }
    path = root / f"{policy}-{seed}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def trajectory(events: Sequence[Event], params: dict[str, dict[str, Any]]) -> list[tuple[float, float]]:
    """(cumulative GPU-hours, true quality of the incumbent) after every change of either."""
    gpu, best_seen, incumbent = 0.0, -math.inf, -math.inf
    out: list[tuple[float, float]] = []
    kinds = {e.node.id: e.node.kind for e in events if isinstance(e, NodeCreated)}
    for e in events:
        if isinstance(e, ComputeUsed):
            gpu += e.gpu_s / 3600
            out.append((gpu, incumbent))
        elif isinstance(e, AttemptFinished) and kinds[e.node_id] != "aggregation":
            m = e.result.metrics
            if m and m[0].value > best_seen:
                best_seen, incumbent = m[0].value, true_quality(params[e.node_id])
                out.append((gpu, incumbent))
    return out


def best_idea(variants: list[dict[str, Any]]) -> dict[str, Any]:
    return max(
        variants,
        key=lambda v: true_quality(
            {**v["fixed"], "x": v["fixed"]["x_star"], "y": v["fixed"]["y_star"], "method": True, "ab": False}
        ),
    )


def run_one(
    root: Path, seed: int, policy: str, variants: list[dict[str, Any]], budget: float
) -> dict[str, Any]:
    cfg = load_config(config(root, seed, policy, variants, budget))
    run_dir, journal = lifecycle.create_run(cfg)
    t0 = time.process_time()
    outcome = lifecycle.execute(cfg, journal, executor=SimExecutor(seed))
    cpu = time.process_time() - t0
    events = list(journal.log.events)
    params = {e.node.id: e.node.params for e in events if isinstance(e, NodeCreated)}
    traj = trajectory(events, params)
    journal.log.close()
    decisions = [e for e in events if isinstance(e, AllocationDecided)]
    stopped = [e.idea for e in decisions if e.decision == "stopped"]
    extended = [e for e in decisions if e.decision == "extended"]
    return {
        "outcome": outcome.status,
        "gpu_hours": traj[-1][0] if traj else 0.0,
        "final": traj[-1][1] if traj else None,
        "trajectory": traj,
        "nodes": len(params),
        "stopped": len(stopped),
        "best_idea_stopped": best_idea(variants)["name"] in stopped,
        "stages_extended": len(extended),
        "driver_cpu_s": cpu,
        "driver_ms_per_node": 1000 * cpu / max(1, len(params)),
    }


def needed(traj: list[tuple[float, float]], target: float) -> float:
    return next((g for g, q in traj if q >= target - 1e-12), math.inf)


def interval(values: Sequence[float], stat: Any = np.median, n: int = 2000, seed: int = 0) -> list[float]:
    """Percentile bootstrap 95% interval of `stat` over seeds."""
    rng = np.random.default_rng(seed)
    arr = np.asarray(values, dtype=float)
    boots = [stat(rng.choice(arr, size=len(arr), replace=True)) for _ in range(n)]
    # "nearest": a seed that never matched is an infinite fraction, and interpolating between
    # two infinities would give nan
    return [
        float(np.percentile(boots, 2.5, method="nearest")),
        float(np.percentile(boots, 97.5, method="nearest")),
    ]


def run_all() -> dict[str, list[dict[str, Any]]]:
    """Every policy and the oracle (the best idea alone) on every seed."""
    per: dict[str, list[dict[str, Any]]] = {p: [] for p in (*POLICIES, "oracle")}
    # Run directories in memory where there is a tmpfs: an fsync per event costs ~10 ms on this disk.
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="silva-bench-budgets-", dir=shm) as tmp:
        for seed in range(SEEDS):
            variants = ideas(seed)
            for policy in POLICIES:
                per[policy].append(run_one(Path(tmp) / f"s{seed}", seed, policy, variants, BUDGET_GPU_H))
            per["oracle"].append(
                run_one(Path(tmp) / f"s{seed}", seed, "fair", [best_idea(variants)], BUDGET_GPU_H)
            )
            print(f"seed {seed}: " + ", ".join(f"{p} {per[p][-1]['final']:.4f}" for p in per), flush=True)
    return per


def policy_summary(
    runs: list[dict[str, Any]], oracle: list[float], fair_final: list[float]
) -> dict[str, Any]:
    finals = [r["final"] for r in runs]
    regret = [o - f for o, f in zip(oracle, finals)]
    fractions = [needed(r["trajectory"], t) / BUDGET_GPU_H for r, t in zip(runs, fair_final)]
    finite = [f for f in fractions if math.isfinite(f)]
    return {
        "best_true_quality": {"mean": float(np.mean(finals)), "ci95": interval(finals, np.mean)},
        "regret": {"mean": float(np.mean(regret)), "ci95": interval(regret, np.mean)},
        "budget_to_match_fair": {
            "median_fraction": float(np.median(fractions)) if len(finite) == len(fractions) else None,
            "ci95": interval(fractions) if len(finite) == len(fractions) else None,
            "per_seed": fractions,
            "matched_seeds": len(finite),
        },
        "gpu_hours_spent": {"mean": float(np.mean([r["gpu_hours"] for r in runs]))},
        "ideas_stopped": {"mean": float(np.mean([r["stopped"] for r in runs]))},
        "best_idea_stopped": {"seeds": sum(r["best_idea_stopped"] for r in runs)},
        "stages_extended": {"mean": float(np.mean([r["stages_extended"] for r in runs]))},
        "nodes": {"mean": float(np.mean([r["nodes"] for r in runs]))},
        "driver_ms_per_node": {"mean": float(np.mean([r["driver_ms_per_node"] for r in runs]))},
    }


def target(summary: dict[str, Any]) -> dict[str, Any]:
    """The target: the median budget fraction at most one half; the interval is reported beside it
    (a seed that never matches counts as an infinite fraction, so the median is over all seeds)."""
    out = {}
    for policy in TARGETS:
        sh = summary[policy]["budget_to_match_fair"]
        median = float(np.median(sh["per_seed"]))
        out[policy] = {
            "matches_fair_with_half_the_budget": median <= 0.5,
            "median_fraction": median,
            "ci95": interval(sh["per_seed"]),
            "ci95_upper_at_most_half": interval(sh["per_seed"])[1] <= 0.5,
            "matched_seeds": sh["matched_seeds"],
        }
    return out


def main() -> None:
    results: dict[str, Any] = {
        "ideas": IDEAS,
        "seeds": SEEDS,
        "slots": SLOTS,
        "budget_gpu_hours": BUDGET_GPU_H,
        "duration_hours": {"median": MEDIAN_H, "sigma": SIGMA},
        "noise": NOISE,
        "groups": [{"ideas": n, "gain": g, "bonus": b} for n, g, b in GROUPS],
        "policies": POLICIES,
        "runs": {},
    }
    started = time.time()
    per = run_all()
    fair_final = [r["final"] for r in per["fair"]]
    oracle = [r["final"] for r in per["oracle"]]
    summary: dict[str, Any] = {policy: policy_summary(per[policy], oracle, fair_final) for policy in POLICIES}
    summary["oracle_best_idea_alone"] = {
        "mean": float(np.mean(oracle)),
        "gpu_hours": float(np.mean([r["gpu_hours"] for r in per["oracle"]])),
    }
    summary["target"] = target(summary)
    results["summary"] = summary
    results["wall_s"] = time.time() - started
    results["runs"] = {
        p: [{k: v for k, v in r.items() if k != "trajectory"} for r in runs] for p, runs in per.items()
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
