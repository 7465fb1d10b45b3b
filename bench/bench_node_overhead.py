"""Where a node's slot time goes outside its experiment, and what warming the sandbox saves.

    .venv/bin/python bench/bench_node_overhead.py [--providers local docker] [--median 4] [--pairs 1]
        [--variants cold warm prestart] [--prestart SLOTS] [--busy]

A provider this machine lacks (no Docker engine, no silva-base image) is skipped with the reason.

Each run is a real offline `silva run` (the template search, four stages, `--slots` slots on
the in-process executor) whose experiments do what generated ones do: import numpy and
matplotlib, work (a lognormal sleep of `--median` s, or with `--busy` as many CPU seconds spun,
sigma 0.5, drawn from the node id so that every run sees the same durations), plot, and write
results.json. The experiment stamps the time at its first line, after its imports and at its
end; the attempt's own start and end come from the journal (`AttemptResult.started_at`/
`finished_at`, taken inside the job). So each attempt splits into:
  start       job start -> the experiment's first line: a fresh workspace, the sandbox, the
              interpreter (of which `sandbox_noop_s`, an exec of `true` opened and closed the same
              way, is the sandbox alone)
  imports     first line -> after `import numpy, matplotlib.pyplot`
  experiment  the experiment's own work, its plot and its results file
  collection  its end -> job end: the process exiting, the sandbox closing, results.json read
and what a slot did besides attempts (dispatch, stage ends, aggregations, idle) is the rest of
slots x makespan, per node. Utilization = the experiments' own time / (slots x makespan).
Each provider runs its variants in turn, A B C A B C, in one process: cold (`font_cache: false`,
as before), warm (the prebuilt font cache, sandbox/warm.py) and prestart (the font cache and
`prestart: --prestart` sandboxes, or containers, started ahead of need, sandbox/prestart.py).
With prestart an attempt's imports are mostly done before its slot: its "start" then ends when
the waiting interpreter runs the experiment's first line. Writes bench/results/node_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.events import AttemptFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from sandbox import Limits, SandboxProvider, SandboxUnavailable, get_provider  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "node_overhead.json"
PHASES_FILE = "phases.json"
# The corpus: an experiment as an LLM writes one, independent of the code it measures.
EXPERIMENT = """
import time
T0 = time.time()
import hashlib, json, math, random
import numpy as np
import matplotlib
import matplotlib.pyplot as plt
T1 = time.time()
spec = json.load(open("silva_params.json"))
p = spec["params"]
seed = int(hashlib.sha256(spec["node_id"].encode()).hexdigest()[:8], 16)
work = random.Random(seed).lognormvariate(math.log(p["median"]), 0.5)
if p["busy"]:  # CPU seconds of its own: stretched by whatever else runs on the cores
    c0 = time.process_time()
    while time.process_time() - c0 < work:
        pass
else:
    time.sleep(work)
x = np.linspace(0, 1, 200)
plt.plot(x, np.sin(6 * x * p["x"]))
plt.savefig("curve.png")
json.dump({"metrics": {"score": float(1 - (p["x"] - 0.3) ** 2)}}, open("results.json", "w"))
T2 = time.time()
json.dump({"t0": T0, "t1": T1, "t2": T2}, open("phases.json", "w"))
"""


def template(root: Path, median_s: float, busy: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "experiment.py").write_text(EXPERIMENT)
    spec = {
        "name": "overhead",
        "command": ["{python}", "experiment.py"],
        "metrics": [{"name": "score", "direction": "maximize", "primary": True}],
        "hyperparameters": {"x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5}},
        "method": {"name": "variant", "param": "variant"},
        "ablations": [{"name": "no-plot", "param": "ab"}],
        "fixed": {"median": median_s, "busy": busy},
    }
    (root / "template.yaml").write_text(yaml.safe_dump(spec))
    return root


VARIANTS = ("cold", "warm", "prestart")


def config(tmp: Path, tpl: Path, provider: str, variant: str, slots: int, prestart: int) -> Path:
    options: dict[str, Any] = {"font_cache": variant != "cold"}
    if variant == "prestart":
        options["prestart"] = prestart
    cfg = {
        "name": f"{provider}-{variant}",
        "template": str(tpl),
        "output_dir": str(tmp / "runs"),
        "replicates": 1,
        "stages": {s: {"max_nodes": 2 * slots} for s in ("preliminary", "hyperparameter", "agenda")}
        | {"ablation": {"max_nodes": slots}},
        "budgets": {"wall_clock_s": 3600, "node_timeout_s": 300},
        "executor": {"kind": "inprocess", "max_in_flight": slots},
        "sandbox": {"provider": provider, "options": options},
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def noop_s(provider: SandboxProvider, root: Path, reps: int = 5) -> float:
    times = []
    for i in range(reps):
        start = time.perf_counter()
        box = provider.open(root / f"noop-{i}")
        box.exec(["true"], limits=Limits(wall_s=60))
        box.close()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def split(run_dir: Path, slots: int) -> dict[str, Any]:
    journal = Journal.open(run_dir, read_only=True)
    parts: dict[str, list[float]] = {"start": [], "imports": [], "experiment": [], "collection": []}
    first, last, held, buggy = float("inf"), 0.0, 0.0, 0
    for e in journal.log.read(AttemptFinished):
        r = e.result
        buggy += r.status == "buggy"
        first, last = min(first, r.started_at), max(last, r.finished_at)
        held += r.finished_at - r.started_at
        stamps = run_dir / r.workspace / PHASES_FILE
        if not stamps.is_file():
            continue  # an aggregation, or a buggy attempt: slot time, not an experiment
        t = json.loads(stamps.read_text())
        parts["start"].append(t["t0"] - r.started_at)
        parts["imports"].append(t["t1"] - t["t0"])
        parts["experiment"].append(t["t2"] - t["t1"])
        parts["collection"].append(r.finished_at - t["t2"])
    n = len(parts["experiment"])
    makespan = last - first
    return {
        "experiments": n,
        "buggy_attempts": buggy,  # each experiment here succeeds: a buggy one is the sandbox's
        "makespan_s": round(makespan, 2),
        "per_node_median_s": {k: round(statistics.median(v), 3) for k, v in parts.items()},
        "per_node_mean_s": {k: round(statistics.fmean(v), 3) for k, v in parts.items()},
        "slot_s_per_node": round(slots * makespan / n, 3),
        "other_slot_s_per_node": round((slots * makespan - held) / n, 3),
        "utilization": round(sum(parts["experiment"]) / (slots * makespan), 3),
    }


def one_run(tmp: Path, provider: str, variant: str, args: argparse.Namespace) -> dict[str, Any]:
    tpl = template(tmp / "tpl", args.median, args.busy)
    cfg = config(tmp, tpl, provider, variant, args.slots, args.prestart or args.slots)
    load = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, "-m", "silva.cli.main", "run", str(cfg)],
        cwd=tmp,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{provider} run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    (run_dir,) = (tmp / "runs").iterdir()
    row = {"provider": provider, "variant": variant, "warm": variant != "cold", "load_before": round(load, 2)}
    return row | split(run_dir, args.slots)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--providers", nargs="+", default=["local", "docker"], help="missing ones skipped")
    ap.add_argument("--median", type=float, default=4.0, help="experiment median, s")
    ap.add_argument("--busy", action="store_true", help="the experiment spins for its CPU seconds")
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=1, help="rounds of the variants per provider")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--prestart", type=int, default=0, help="sandboxes started ahead (default: --slots)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    noops: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="silva-overhead-") as tmp:
        for provider in args.providers:
            try:
                sandbox = get_provider(provider)
                sandbox.check()
            except SandboxUnavailable as e:
                print(f"skipping {provider}: {e}")
                continue
            noops[provider] = round(noop_s(sandbox, Path(tmp) / provider / "noop"), 3)
            for pair in range(args.pairs):
                for variant in args.variants:
                    row = one_run(Path(tmp) / provider / f"{pair}-{variant}", provider, variant, args)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    report = {
        "command": "bench/bench_node_overhead.py " + " ".join(sys.argv[1:]),
        "median_s": args.median,
        "busy": args.busy,
        "slots": args.slots,
        "cpus": os.cpu_count(),
        "sandbox_noop_s": noops,
        "rows": rows,
        "load_after": round(os.getloadavg()[0], 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
