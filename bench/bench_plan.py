"""A day of a big forest, planned (docs/plan.md, "The north-star benchmark"). Writes
bench/results/plan.json.

`silva plan` on a forest of `--ideas` agentic ideas (the offline example's idea and stages,
Sonnet writing code, papers and reviews, Haiku judging, at the built-in prices, LLM latencies
of hosted models: `silva.plan.DEFAULT_ROLES`), with the LLM writeup and a five-review panel
after each idea's search; experiments lognormal with a 20-minute median (sigma 0.75), one GPU
each; a 24-hour wall-clock budget; at each of `--slots`. `--forest template`: template ideas
(stages of 1, 60, 20 and 1 nodes), no LLM. `--forest rolling`: the north-star day, a rolling
forest (`ideation:`) admitting up to `--ideas` ideas as the slots need them
(`write_rolling_config`). Each plan runs in its own process (its peak memory).

    .venv/bin/python bench/bench_plan.py [--ideas 100] [--slots 100,1000,10000] [--forest agentic]
    .venv/bin/python bench/bench_plan.py --forest rolling --ideas 5000 --slots 1000
    (no --forest: the agentic forest, then the rolling north-star day, as `make bench` runs it)
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


# Hosted models as the north star assumes them: Sonnet writes code and papers and reviews,
# Haiku judges; priced from the built-in table (engine/llm/prices.py). `silva plan` calls none.
LLM = {
    "providers": {"anthropic": {"kind": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"}},
    "models": {
        "sonnet": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "haiku": {"provider": "anthropic", "model": "claude-haiku-4-5"},
    },
    "roles": {
        "code": {"model": "sonnet", "max_tokens": 8192},
        "writeup": {"model": "sonnet", "max_tokens": 8192},
        "review": {"model": "sonnet", "max_tokens": 4096},
        "feedback": {"model": "haiku", "max_tokens": 1024},
        "vision": {"model": "haiku", "max_tokens": 1024},
        "selection": {"model": "haiku", "max_tokens": 512},
    },
}


def write_agentic_config(work: Path, ideas: int) -> Path:
    """A forest of `ideas` agentic ideas (the offline example's idea, renamed), with the LLM
    writeup and review after each idea's search, one GPU per experiment."""
    idea = yaml.safe_load((REPO / "examples" / "ideas" / "label_noise.yaml").read_text())
    sources = []
    for i in range(ideas):
        path = work / "ideas" / f"idea{i:03d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({**idea, "name": f"idea{i:03d}"}))
        sources.append({"path": str(path)})
    cfg = {
        "name": "northstar",
        "ideas": sources,
        "output_dir": str(work / "runs"),
        "seed": 0,
        "replicates": 3,
        "stages": {
            "preliminary": {"max_nodes": 4},
            "hyperparameter": {"max_nodes": 6},
            "agenda": {"max_nodes": 4},
            "ablation": {"max_nodes": 3},
        },
        "search": {"num_drafts": 2},
        "budgets": {"wall_clock_s": 24 * 3600, "node_timeout_s": 7200},
        "executor": {"kind": "inprocess", "max_in_flight": 1},
        "resources": {"default": {"num_cpus": 4, "num_gpus": 1}},
        "sandbox": "none",
        "llm": LLM,
        "writeup": {},
        "review": {},
    }
    path = work / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    (work / "plan.yaml").write_text(yaml.safe_dump(SETTINGS))
    return path


def write_rolling_config(work: Path, ideas: int) -> Path:
    """The north-star day: a rolling forest (`ideation:`) on the agentic config's models, smaller
    ideas (stages of 2, 4, 3 and 2 search nodes, one seed replicate) so that one manuscript stays
    under $5 at hosted prices, LLM writeup and review after each idea's search; no admissions
    after 20 h so the last ideas are written and reviewed inside the day. `ideas` caps admissions."""
    path = write_agentic_config(work, 1)
    cfg = yaml.safe_load(path.read_text())
    del cfg["ideas"]
    cfg.update(
        replicates=1,
        stages={
            "preliminary": {"max_nodes": 2},
            "hyperparameter": {"max_nodes": 4},
            "agenda": {"max_nodes": 3},
            "ablation": {"max_nodes": 2},
        },
        search={"num_drafts": 2},
        ideation={
            "topic": "Cheap defences of linear classifiers against label noise.",
            "metrics": [{"name": "val_accuracy", "direction": "maximize", "primary": True}],
            "reflections": 1,
            "novelty_rounds": 2,
            "max_ideas": ideas,
            "admit_until_s": 20 * 3600,
        },
    )
    path.write_text(yaml.safe_dump(cfg))
    return path


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
        "ideas_admitted": r["ideas_admitted"],
        "ideas_per_hour": r["ideas_per_hour"],
        "gpu_hours": r["gpu_hours"],
        # GPU-hours over the GPUs' hours (one per slot here), and the slots' use by experiments.
        "gpu_utilization": round(r["gpu_hours"] / (slots * r["wall_s"] / 3600), 4) if r["wall_s"] else None,
        "slot_utilization": r["utilization"],
        "llm_dollars": r["llm_dollars"],
        "dollars_per_paper": r["dollars_per_paper"],  # over papers written
        # The north star's measure: all LLM spend, ideation included, over reviewed manuscripts.
        "dollars_per_reviewed": (
            round(r["llm_dollars"] / r["papers_reviewed"], 4) if r["papers_reviewed"] else None
        ),
        "llm_calls": r["llm_calls"],
        "driver_cpu_ms_per_completion": r["driver_cpu_ms_per_completion"],
        "driver_peak_rss_mb": r["driver_peak_rss_mb"],
        "completions": r["completions"],
        "load_avg": os.getloadavg()[0],
    }


def run(forest: str, ideas: int, slots: str) -> None:
    rows = []
    writers = {"agentic": write_agentic_config, "template": write_config, "rolling": write_rolling_config}
    write = writers[forest]
    with tempfile.TemporaryDirectory(prefix="silva-bench-plan-") as tmp:
        config = write(Path(tmp), ideas)
        for n in (int(s) for s in slots.split(",")):
            row = {"forest": forest, **plan_once(config, n)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    key = f"{forest}_{ideas}_ideas"  # rows of other slot counts stay
    kept = [r for r in results.get(key, {}).get("rows", []) if r["slots"] not in {r["slots"] for r in rows}]
    results[key] = {"cpus": os.cpu_count(), "rows": sorted(kept + rows, key=lambda r: r["slots"])}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ideas", type=int, default=100)
    ap.add_argument("--slots", default="100,1000,10000")
    ap.add_argument(
        "--forest",
        choices=("agentic", "template", "rolling"),
        help="default: the agentic forest, then the north-star day (rolling, 1,000 slots, up to 5,000 ideas)",
    )
    args = ap.parse_args()
    if args.forest is not None:
        run(args.forest, args.ideas, args.slots)
        return
    run("agentic", args.ideas, args.slots)
    run("rolling", 5000, "1000")


if __name__ == "__main__":
    main()
