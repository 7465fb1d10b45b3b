"""Where a pipeline run's slots idled: one run of bench_pipeline.py's agentic search kept on disk
(or a run directory already there), read back from its journal and ledger.

    .venv/bin/python bench/trace_pipeline.py --slots 4 --ratio 1 --ideas 8 --out /tmp/trace8
    .venv/bin/python bench/trace_pipeline.py --slots 4 --read /tmp/trace8/runs/<run>

Prints the share of slot time held (experiments, replicates, aggregations), the idle slot time
while a proposal waited for a slot (the dispatcher's own delay; 0 when it starts work at once),
idle slot time per 5 s of the run (the first proposals, the last decisions), and the slowest
calls of jobs that only ask the LLM (a stage's selection holds its decision).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]

from bench_pipeline import agentic_run, fake_llm, saved_median  # noqa: E402

from engine.events import AttemptCancelled, AttemptFinished, AttemptStarted, StepFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer  # noqa: E402

BIN_S, STEP_S = 5.0, 0.05


def trace(run_dir: Path, slots: int) -> dict[str, object]:
    j = Journal.open(run_dir, read_only=True)
    events = list(j.log.read(AttemptStarted, StepFinished, AttemptFinished, AttemptCancelled))
    t0 = min(e.ts for e in events)
    started: dict[tuple[str, int], tuple[float, str | None]] = {}
    holds: list[tuple[float, float]] = []  # what took a slot: a run step, a replicate, an aggregation
    thought: dict[str, float] = {}  # node -> its think's end
    ran: dict[str, float] = {}  # node -> its run's start
    for e in events:
        if not isinstance(e, (AttemptStarted, StepFinished, AttemptFinished, AttemptCancelled)):
            continue
        key, t = (e.node_id, e.attempt), e.ts - t0
        if isinstance(e, AttemptStarted):
            started[key] = (t, e.step)
            if e.step in ("run", "all"):
                ran.setdefault(e.node_id, t)
        elif key in started:
            begun, step = started.pop(key)
            if step in ("run", "all") or (not step and j.nodes[key[0]].kind != "selection"):
                holds.append((begun, t))
            if step == "think" and isinstance(e, StepFinished):
                thought[key[0]] = t
    end = max(b for _, b in holds)
    idle, waited, bins = 0.0, 0.0, defaultdict[int, float](float)
    for k in range(int(end / STEP_S)):
        t = k * STEP_S
        free = max(0, slots - sum(a <= t < b for a, b in holds))
        ready = sum(1 for n, done in thought.items() if n in ran and done <= t < ran[n])
        idle += free * STEP_S
        waited += min(free, ready) * STEP_S
        bins[int(t // BIN_S)] += free * STEP_S
    llm_only = {n.id for n in j if n.kind == "selection"}
    calls = sorted(
        (
            (r.latency_s, r.node_id, r.ts - t0)
            for r in read_records(run_dir / LEDGER_FILE)
            if r.node_id in llm_only and r.hedge != "lost"
        ),
        reverse=True,
    )
    return {
        "slot_time_held": round(1 - idle / (slots * end), 3),
        "idle_while_a_proposal_waited_s": round(waited, 1),
        "idle_slot_s_per_5s": {f"{int(k * BIN_S)}": round(v, 1) for k, v in sorted(bins.items())},
        "slowest_selection_calls": [
            {"node": n, "latency_s": round(lat, 1), "answered_at_s": round(at, 1)} for lat, n, at in calls[:5]
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--ratio", type=float, default=1.0, help="LLM median / the experiments' saved median")
    ap.add_argument("--ideas", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="run here (kept) and trace it")
    ap.add_argument("--read", type=Path, help="trace this run directory instead of running one")
    args = ap.parse_args()
    if (args.out is None) == (args.read is None):
        ap.error("give --out DIR (run one and trace it) or --read RUN_DIR (trace a run already there)")
    run_dir = args.read
    if run_dir is None:
        args.out.mkdir(parents=True, exist_ok=True)
        with FakeLLMServer() as server:
            fake_llm(
                server,
                args.ratio * saved_median(args.slots),
                seed=args.slots * 10 + int(args.ratio) + 1000 * args.seed,
            )
            print(
                json.dumps(
                    agentic_run(args.out, server.url, args.slots, True, seed=args.seed, ideas=args.ideas)
                )
            )
        run_dir = next((args.out / "runs").iterdir())
    elif not (run_dir / "events.jsonl").is_file():
        ap.error(f"--read {run_dir}: not a run directory (no events.jsonl); give the run's own directory")
    print(json.dumps(trace(run_dir, args.slots), indent=2))


if __name__ == "__main__":
    main()
