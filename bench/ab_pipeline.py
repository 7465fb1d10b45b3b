"""Two versions of Silva side by side on the pipeline benchmark's agentic run (bench_pipeline.py):
each repeat runs the baseline tree, then this one, with the same run and latency seeds, so both
see the same machine. On a 2-core machine the experiments' wall time follows the load (they
contend for the cores), and figures taken in different sessions do not compare; these do.

    git worktree add /tmp/base <commit>
    .venv/bin/python bench/ab_pipeline.py --base /tmp/base --ratio 1 --repeats 0 1 2 [--slots 4] [--ideas 4]

Each run is a separate process importing its own tree. Rows are appended to
bench/results/pipeline_ab.json, each naming its tree's commit and its baseline's, and when it
was measured: every A/B ever run is kept.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "pipeline_ab.json"
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from bench_pipeline import own_work_s  # noqa: E402

from engine.journal import Journal  # noqa: E402

ONE_RUN = r"""
import json, sys
from pathlib import Path
tree, ratio, repeat = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
out, median = Path(sys.argv[4]), float(sys.argv[5])
slots, ideas = int(sys.argv[6]), int(sys.argv[7])
sys.path[:0] = [tree + "/bench", tree]
import bench_pipeline as bp
from tests.llm.fake_servers import FakeLLMServer
assert bp.__file__.startswith(tree), bp.__file__
with FakeLLMServer() as server:
    bp.fake_llm(server, ratio * median, seed=slots * 10 + int(ratio) + 1000 * repeat)
    # A forest only where asked: a tree from before `ideas` runs one idea.
    row = bp.agentic_run(out, server.url, slots, True, seed=repeat, **({"ideas": ideas} if ideas > 1 else {}))
    row["llm_requests"] = len(server.requests)
print("ROW " + json.dumps(row), flush=True)
"""


def one(tree: Path, ratio: float, repeat: int, median: float, slots: int, ideas: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                ONE_RUN,
                str(tree),
                str(ratio),
                str(repeat),
                tmp,
                str(median),
                str(slots),
                str(ideas),
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("ROW ")), None)
        if line is None:
            raise SystemExit(f"{tree}: the run failed\n{done.stderr[-3000:]}")
        row = json.loads(line[4:])
        # Measured here for both trees (an older bench_pipeline.py does not): the experiments'
        # time on slots of their own (bench_pipeline.own_work_s).
        j = Journal.open(next((Path(tmp) / "runs").iterdir()), read_only=True)
        work = sum(own_work_s(n) for n in j if n.execution is not None and n.execution.wall_s > 0)
    row.update(
        work_s=round(work, 1),
        utilization_work=round(work / (row["slots"] * row["makespan_s"]), 3),
        ideas=ideas,
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True, help="the baseline's source tree (a git worktree)")
    ap.add_argument("--ratio", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument(
        "--ideas",
        type=int,
        default=1,
        help="a forest of this many copies of the idea (bench_pipeline --ideas)",
    )
    ap.add_argument(
        "--llm-median",
        type=float,
        default=3.01,
        help="LLM median at ratio 1 (s): the experiments' median wall measured at ratio 0",
    )
    args = ap.parse_args()
    rows = json.loads(RESULTS.read_text())["rows"] if RESULTS.is_file() else []
    commits = {"base": commit(args.base), "this": commit(ROOT)}
    for repeat in args.repeats:
        for label, tree in (("base", args.base.resolve()), ("this", ROOT)):
            row = one(tree, args.ratio, repeat, args.llm_median, args.slots, args.ideas)
            row.update(
                tree=label,
                ratio=args.ratio,
                repeat=repeat,
                base_commit=commits["base"],
                commit=commits[label],
                measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            )
            rows.append(row)
            print(
                f"  {args.slots} slots, {args.ideas} idea(s), ratio {args.ratio:g} repeat {repeat} {label}: "
                f"makespan {row['makespan_s']} s, utilization {row['utilization']:.2f}, {row['nodes']} "
                f"nodes, {row['llm_requests']} LLM requests",
                flush=True,
            )
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps({"rows": rows}, indent=2))


def commit(tree: Path) -> str:
    """The tree's HEAD commit (short), '+' when it has uncommitted changes (results left out:
    this tool writes them as it goes)."""
    head = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    )
    dirty = subprocess.run(
        [
            "git",
            "-C",
            str(tree),
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)bench/results",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    main()
