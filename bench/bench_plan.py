"""A day of a big forest, planned (docs/plan.md, "The north-star benchmark"). Writes
bench/results/plan.json.

`silva plan` on a template forest of `--ideas` variants (stages of 1, 60, 20 and 1 search nodes,
3 seed replicates each, an offline writeup per idea), experiments lognormal with a 20-minute
median (sigma 0.75), a 24-hour wall-clock budget, at each of `--slots`. Each plan runs in its
own process (clean peak memory). The forest is of template ideas, not agentic ones: `silva
plan` does not simulate the LLM steps of the agentic search yet, so there are no LLM dollars
and no reviews in these figures (docs/plan.md says what is missing).

    .venv/bin/python bench/bench_plan.py [--ideas 100] [--slots 100,1000,10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "plan.json"
sys.path.insert(0, str(REPO))

from tests.helpers import make_template  # noqa: E402  (the tests' small quadratic template)

SETTINGS = {"durations": {"default": {"median_s": 1200.0, "sigma": 0.75}}}


def write_config(work: Path, ideas: int) -> Path:
    template = make_template(work / "tpl")
    cfg = {
        "name": "northstar",
        "template": str(template),
        "output_dir": str(work / "runs"),
        "seed": 0,
        "replicates": 3,
        "proposer": "sobol",
        "stages": {
            "preliminary": {"max_nodes": 1},
            "hyperparameter": {"max_nodes": 60},
            "agenda": {"max_nodes": 20},
            "ablation": {"max_nodes": 1},
        },
        "budgets": {"wall_clock_s": 24 * 3600, "node_timeout_s": 7200},
        "executor": {"kind": "inprocess", "max_in_flight": 1},
        "resources": {"default": {"num_cpus": 4, "num_gpus": 1}},
        "sandbox": "none",
        "variants": [{"name": f"idea{i:03d}", "fixed": {"q": i}} for i in range(ideas)],
        "writeup": {"offline": True},
    }
    path = work / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    (work / "plan.yaml").write_text(yaml.safe_dump(SETTINGS))
    return path


def plan_once(config: Path, slots: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from silva.cli.main import main; raise SystemExit(main(sys.argv[1:]))",
            "plan",
            str(config),
            "--slots",
            str(slots),
            "--settings",
            str(config.parent / "plan.yaml"),
            "--json",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"silva plan failed:\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout)
    return {
        "slots": slots,
        "ideas": len(r["share_by_idea"]),
        "wall_h": round(r["wall_s"] / 3600, 2),
        "outcome": r["outcome"],
        "stopped_by": r["stopped_by"],
        "nodes": r["nodes"],
        "papers_written": r["papers_written"],
        "papers_reviewed": r["papers_reviewed"],
        "gpu_hours": r["gpu_hours"],
        "gpu_utilization": r["utilization"],
        "llm_dollars": r["llm_dollars"],
        "driver_cpu_ms_per_completion": r["driver_cpu_ms_per_completion"],
        "driver_peak_rss_mb": r["driver_peak_rss_mb"],
        "completions": r["completions"],
        "load_avg": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ideas", type=int, default=100)
    ap.add_argument("--slots", default="100,1000,10000")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="silva-bench-plan-") as tmp:
        config = write_config(Path(tmp), args.ideas)
        for slots in (int(s) for s in args.slots.split(",")):
            row = plan_once(config, slots)
            rows.append(row)
            print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
