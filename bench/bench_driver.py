"""Driver scaling benchmark (docs/engine.md). Writes bench/results/driver.json.

Journals of 1k, 10k and 100k nodes are generated through the Journal API, shaped as a template
forest writes them: one tree per `variants:` entry, each through the four template stages (1
baseline, 60 tuning, 20 method and 1 ablation nodes, 3 seed replicates and an aggregate per
stage: 98 nodes), so a 100k-node run has 1,020 ideas and 4,080 stages. On each:
- (b) `Journal.open` (time, resident memory), `silva status` (a fresh process, start-up
  included), and the driver's cost per completion: the real `silva.lifecycle.execute` (dispatch
  loop, template forest strategy, compute meter, progress line) continuing the run on 64 fresh
  variants, with an executor whose experiments finish in simulated time (no processes). The run
  sits on tmpfs, so this is the driver's own cost, not the disk's.
- (c) the same driver with 1,000 simulated slots on the largest journal, on disk, every event
  made durable before anything is acted on (group commit: engine/groupcommit.py).
Each measurement runs in its own process (clean resident memory figures). The simulated
output tails (about 700 characters) are over engine/blobs.py's MIN_CHARS: they are stored as
content-addressed blobs, as a real node's would be. The machine's load average is recorded with
every figure (a shared machine's wall times are not CPU times).

    .venv/bin/python bench/bench_driver.py [--sizes 1000,10000,100000] [--completions 2000]
    .venv/bin/python bench/bench_driver.py --code DIR --label before   # another checkout, same journals
    .venv/bin/python bench/bench_driver.py --wide 256 [--wide-slots 10000]   # a wide forest, by fifths
    .venv/bin/python bench/bench_driver.py --rolling 300 [--wide-slots 10000]   # a rolling forest, by fifths

`--rolling N`: the north-star day's rolling forest (`ideation:`, bench/bench_plan.py's config:
agentic ideas of 2, 4, 3 and 2 search nodes, the LLM writeup and review after each search),
admitting up to N ideas as the slots need them, from an empty journal to the forest's end. Its
steps are simulated by `silva plan`'s executor (silva/plan/: experiments lognormal, median 20
min; LLM steps at hosted models' latencies, in virtual time; no model called) and its ideas by
the plan's idea source (every idea asked for is admitted), under the real driver as above.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.events import (
    ComputeUsed,
    RunStarted,
    RunStopped,
    SessionStarted,
    StageBest,
    StageEnded,
    StageStarted,
)

if TYPE_CHECKING:
    from engine.journal import Journal
    from engine.node import Node
    from silva.config import RunConfig

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "driver.json"
STAGES = (
    ("preliminary", "baseline", 1),
    ("hyperparameter", "hyperparameter", 60),
    ("agenda", "method", 20),
    ("ablation", "ablation", 1),
)
REPLICATES = 3
NODES_PER_VARIANT = sum(n + REPLICATES + 1 for _, _, n in STAGES)  # 98
LIVE_VARIANTS = 64  # fresh trees the driver grows while it is measured
TEMPLATE = {
    "name": "quad",
    "command": ["{python}", "experiment.py"],
    "metrics": [
        {"name": "score", "direction": "maximize", "primary": True},
        {"name": "cost", "direction": "minimize"},
    ],
    "hyperparameters": {
        "x": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
        "y": {"type": "choice", "values": [0, 1, 2], "default": 1},
    },
    "method": {"name": "bonus", "param": "method"},
    "ablations": [{"name": "penalty", "param": "ab"}],
}
TARGETS = {
    "per_completion_ms": 5.0,
    "open_s": 5.0,
    "status_s": 3.0,
    "driver_rss_mb": 1024.0,
    "completions_per_s_1000_slots": 200.0,
}


# -- simulated experiments -------------------------------------------------------------------
def stdout_of(rng: random.Random) -> str:
    """What a training script prints: about 700 bytes, as in a real node's stdout tail."""
    return "".join(f"epoch {k:3d} loss {rng.random():.5f} val {rng.random():.5f}\n" for k in range(20))


def simulated_result(
    params: dict[str, Any], seed: int | None, rng: random.Random, start: float, took: float
) -> Any:
    from engine.node import AttemptResult, ExecSummary, MetricValue

    x, y = float(params.get("x", 0.5)), float(params.get("y", 1))
    score = 1.0 - (x - 0.3) ** 2 - 0.1 * y + 0.05 * bool(params.get("method")) - 0.02 * bool(params.get("ab"))
    score += 0.01 * rng.gauss(0, 1) + 0.001 * (seed or 0)
    buggy = rng.random() < 0.03
    return AttemptResult(
        status="buggy" if buggy else "good",
        reason="Traceback: simulated failure" if buggy else "",
        metrics=[]
        if buggy
        else [
            MetricValue(name="score", value=score, direction="maximize"),
            MetricValue(name="cost", value=x + y, direction="minimize"),
        ],
        execution=ExecSummary(
            exit_code=1 if buggy else 0, wall_s=took, cpu_s=took, stdout_tail=stdout_of(rng)
        ),
        workspace="nodes/sim/attempt-1",
        worker="sim:0",
        started_at=start,
        finished_at=start + took,
    )


class SimExecutor:
    """Experiments that end after lognormal simulated durations (median 300 s); no processes.
    `wait` returns the next one to end at once, so all the wall time measured is the driver's."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.now = time.time()
        self.heap: list[tuple[float, int]] = []
        self.jobs: dict[int, tuple[Any, float, float]] = {}
        self.ids = itertools.count()
        self.marks: list[float] = []  # perf_counter at each completion
        self.cpu_marks: list[float] = []  # process_time at each completion

    def submit(self, job: Any, resources: Any) -> int:
        handle = next(self.ids)
        took = 300.0 * math.exp(self.rng.gauss(0, 1))
        self.jobs[handle] = (job, self.now, took)
        heapq.heappush(self.heap, (self.now + took, handle))
        return handle

    def wait(self, handles: Any, timeout: float) -> Any:
        from engine.executor import JobDone
        from engine.node import AttemptResult

        while self.heap:
            end, handle = heapq.heappop(self.heap)
            if handle in self.jobs:
                break
        else:
            return None
        job, start, took = self.jobs.pop(handle)
        self.now = max(self.now, end)
        params = getattr(job, "params", None)
        result = (
            simulated_result(params, getattr(job, "seed", 0), self.rng, start, took)
            if params is not None
            else AttemptResult(status="good", started_at=start, finished_at=start + took, worker="sim:0")
        )
        self.marks.append(time.perf_counter())
        self.cpu_marks.append(time.process_time())
        return JobDone(handle, result)

    def cancel(self, handle: int) -> None:
        self.jobs.pop(handle, None)

    def shutdown(self) -> None:
        pass


# -- generating a journal ----------------------------------------------------------------------
def write_template(work: Path) -> Path:
    """The template folder; its experiment only raises, since every run here is simulated."""
    import yaml

    tpl = work / "template"
    tpl.mkdir(parents=True, exist_ok=True)
    (tpl / "experiment.py").write_text("raise SystemExit('the benchmark simulates experiments')\n")
    (tpl / "template.yaml").write_text(yaml.safe_dump(TEMPLATE))
    return tpl


def forest_config(
    work: Path, tpl: Path, variants: list[dict[str, Any]], stages: tuple[tuple[str, str, int], ...]
) -> RunConfig:
    from silva.config import RunConfig

    return RunConfig.model_validate(
        {
            "name": "driver",
            "template": str(tpl),
            "output_dir": str(work / "runs"),
            "seed": 0,
            "replicates": REPLICATES,
            "proposer": "sobol",
            "stages": {s: {"max_nodes": n} for s, _, n in stages},
            "budgets": {"wall_clock_s": None, "node_timeout_s": 600},
            "executor": {"kind": "inprocess", "max_in_flight": 64},
            "sandbox": "none",
            "variants": variants,
        }
    )


class History:
    """Writes finished trees into a journal, shaped as the template forest grows them."""

    def __init__(self, journal: Journal, rng: random.Random, clock: float) -> None:
        self.j = journal
        self.rng = rng
        self.clock = clock

    def finish(self, node: Node, good: bool = False) -> Node:
        """Adds `node` and one simulated attempt with its compute; `good` redraws a failure."""
        j, rng = self.j, self.rng
        node = j.add_node(node)
        j.attempt_started(node.id, 1)
        took = 300.0 * math.exp(rng.gauss(0, 1))
        result = simulated_result(node.params, node.seed, rng, self.clock, took)
        if good and result.status != "good":
            result = simulated_result(node.params, node.seed, random.Random(0), self.clock, took)
        j.record(
            ComputeUsed(
                node_id=node.id,
                attempt=1,
                idea=node.idea,
                kind=node.kind,
                how="finished",
                num_gpus=0.0,
                num_cpus=1.0,
                seconds=took,
                gpu_s=0.0,
                cpu_s=took,
                started_at=result.started_at,
                finished_at=result.finished_at,
            )
        )
        j.attempt_finished(node.id, 1, result)
        self.clock += took / 64
        return j.nodes[node.id]

    def start(self, cfg: RunConfig) -> None:
        with self.j.log.group():
            self.j.record(
                RunStarted(
                    config=cfg.model_dump(mode="json"),
                    metrics=TEMPLATE["metrics"],
                    stages=[s for s, _, _ in STAGES],
                )
            )
            self.j.record(SessionStarted(resumed=False))

    def variant(self, idea: str, fixed: dict[str, Any]) -> None:
        """One idea's tree through the four stages, each rooted at the previous stage's best."""
        root: Node | None = None
        # Fsynced per batch of one variant: 400k separate fsyncs would take most of an hour here.
        with self.j.log.group():
            for stage, kind, count in STAGES:
                root = self.stage(idea, fixed, stage, kind, count, root)

    def stage(
        self, idea: str, fixed: dict[str, Any], stage: str, kind: str, count: int, root: Node | None
    ) -> Node:
        """A stage's `count` searched nodes, its best, and the best's replicates; returns the best."""
        self.j.record(StageStarted(idea=idea, stage=stage, root=root.id if root else None))
        searched = [
            self.finish(self.searched(idea, fixed, stage, kind, root), good=count == 1) for _ in range(count)
        ]
        best = max(
            (n for n in searched if n.metric("score") is not None),
            key=lambda n: n.metric("score") or 0,
        )
        reason = f"node budget of {count} used; best on score"
        self.j.record(
            StageBest(
                idea=idea,
                stage=stage,
                node_id=best.id,
                metric="score",
                value=best.metric("score"),
                reason=reason,
            )
        )
        agg = self.replicate(idea, stage, kind, best)
        self.j.record(
            StageEnded(idea=idea, stage=stage, best_node_id=best.id, aggregate_node_id=agg.id, reason=reason)
        )
        return best

    def searched(self, idea: str, fixed: dict[str, Any], stage: str, kind: str, root: Node | None) -> Node:
        """A node the stage's proposer might have drawn (not yet in the journal)."""
        from engine.node import Node, Origin

        params = {
            "x": self.rng.random(),
            "y": self.rng.choice([0, 1, 2]),
            "method": stage in ("agenda", "ablation"),
            "ab": stage == "ablation",
            **fixed,
        }
        return Node(
            parent_id=root.id if root else None,
            stage=stage,
            kind=kind,
            idea=idea,
            seed=0,
            plan=f"try x={params['x']:.4f}, y={params['y']}",
            params=params,
            origin=Origin(ablation="penalty" if stage == "ablation" else ""),
        )

    def replicate(self, idea: str, stage: str, kind: str, best: Node) -> Node:
        """The best node's seed replicates and their aggregate; returns the aggregate."""
        from engine.node import Node, Origin

        reps = [
            self.finish(
                Node(
                    parent_id=best.id,
                    stage=stage,
                    kind="replication",
                    idea=idea,
                    seed=i,
                    plan=f"seed replicate {i} of {best.id}",
                    params=best.params,
                    origin=Origin(label=kind),
                )
            )
            for i in range(1, REPLICATES + 1)
        ]
        return self.finish(
            Node(
                parent_id=best.id,
                stage=stage,
                kind="aggregation",
                idea=idea,
                plan=f"aggregate {REPLICATES} seed replicates of {best.id}",
                refs=[best.id, *[r.id for r in reps]],
            )
        )


def write_run(
    work: Path,
    n_nodes: int,
    live: int = LIVE_VARIANTS,
    stages: tuple[tuple[str, str, int], ...] = STAGES,
    name: str = "",
) -> Path:
    """A template-forest run of about `n_nodes` finished nodes, plus `live` unstarted trees."""
    import yaml

    from engine.journal import Journal

    tpl = write_template(work)
    done = round(n_nodes / NODES_PER_VARIANT)
    variants: list[dict[str, Any]] = [{"name": f"v{i:05d}", "fixed": {"q": i}} for i in range(done + live)]
    cfg = forest_config(work, tpl, variants, stages)
    run = work / (name or f"run-{n_nodes}")
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    history = History(Journal.open(run), random.Random(n_nodes), time.time() - 3600.0 * 24)
    history.start(cfg)
    for v in variants[:done]:
        history.variant(v["name"], v["fixed"])
    history.j.record(RunStopped(reason="interrupted by the user", budget=None, signal="SIGINT"))
    history.j.log.close()
    return run


# -- measurements (each in a child process) ------------------------------------------------------
def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_open(run: Path) -> dict[str, Any]:
    from engine.journal import Journal

    start = time.perf_counter()
    cpu = time.process_time()
    j = Journal.open(run, read_only=True)
    return {
        "open_s": time.perf_counter() - start,
        "open_cpu_s": time.process_time() - cpu,
        "open_rss_mb": rss_mb(),
        "nodes": len(j.nodes),
        "from_snapshot": j.log.snapshot_count > 0,
    }


def child_driver(run: Path, completions: int, slots: int, tracking: str = "off") -> dict[str, Any]:
    """`tracking`: a backend whose follower process (silva/tracking/) runs beside the driver."""
    from rich.console import Console

    from silva.lifecycle import execute, open_run
    from silva.progress import Progress
    from silva.tracking.config import TrackingConfig

    start = time.perf_counter()
    cfg, journal = open_run(run)
    opened = time.perf_counter() - start
    nodes = len(journal.nodes)
    budgets = cfg.budgets.model_copy(update={"max_nodes": nodes + completions + slots})
    cfg = cfg.model_copy(
        update={
            "budgets": budgets,
            "executor": cfg.executor.model_copy(update={"max_in_flight": slots}),
            "tracking": None if tracking == "off" else TrackingConfig(backend=tracking, drain_s=0),
        }
    )
    sim = SimExecutor()
    with open(os.devnull, "w") as sink, Progress(Console(file=sink, force_terminal=False)) as progress:
        outcome = execute(cfg, journal, on_change=progress.update, executor=sim)
    journal.log.close()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    warm = completions // 5
    marks, cpu = sim.marks[warm:completions], sim.cpu_marks[warm:completions]
    per = (marks[-1] - marks[0]) / (len(marks) - 1)
    return {
        "nodes_before": nodes,
        "completions": len(sim.marks),
        "measured": len(marks) - 1,
        "per_completion_ms": per * 1e3,
        "per_completion_cpu_ms": (cpu[-1] - cpu[0]) / (len(cpu) - 1) * 1e3,
        "completions_per_s": 1 / per,
        "open_s": opened,
        "driver_rss_mb": rss_mb(),
        "outcome": outcome.status,
        "slots": slots,
        "tracking": tracking,
        "follower_cpu_s": children.ru_utime + children.ru_stime,  # the follower, once it ended
        "events": journal.log.count,
        "events_sent": sum(json.loads(c.read_text())["seq"] + 1 for c in run.glob("tracking/*.json")),
    }


def cpu_per_completion(cpu: list[float]) -> dict[str, Any]:
    """Driver CPU per completion over the whole run, its last fifth, and each fifth in turn."""

    def per(marks: list[float]) -> float:
        return (marks[-1] - marks[0]) / max(1, len(marks) - 1) * 1e3

    fifth = max(2, len(cpu) // 5)
    return {
        "cpu_ms": per(cpu),
        "last_fifth_cpu_ms": per(cpu[-fifth:]),
        "fifths_cpu_ms": [round(per(cpu[k * fifth : (k + 1) * fifth + 1]), 3) for k in range(5)],
    }


def child_forest(run: Path, ideas: int, slots: int, completions: int) -> dict[str, Any]:
    """The real driver on the run's finished trees plus its first `ideas` unstarted ones, at
    `slots` simulated slots, until the forest ends (or `completions`, when not 0)."""
    from rich.console import Console

    from silva.lifecycle import execute, open_run
    from silva.progress import Progress

    cfg, journal = open_run(run)
    nodes = len(journal.nodes)
    done = {n.idea for n in journal.nodes.values()}
    keep = [v for v in cfg.variants if v.name in done]
    keep += [v for v in cfg.variants if v.name not in done][:ideas]
    budgets = cfg.budgets.model_copy(update={"max_nodes": nodes + completions if completions else None})
    executor = cfg.executor.model_copy(update={"max_in_flight": slots})
    cfg = cfg.model_copy(update={"budgets": budgets, "executor": executor, "variants": keep})
    sim = SimExecutor()
    start = time.process_time()
    with open(os.devnull, "w") as sink, Progress(Console(file=sink, force_terminal=False)) as progress:
        outcome = execute(cfg, journal, on_change=progress.update, executor=sim)
    took = time.process_time() - start
    journal.log.close()
    return {
        "nodes_before": nodes,
        "ideas": ideas,
        "slots": slots,
        "completions": len(sim.marks),
        **cpu_per_completion(sim.cpu_marks),
        "driver_cpu_s": took,
        "driver_rss_mb": rss_mb(),
        "outcome": outcome.status,
        "message": outcome.message[:200],
    }


class Marked:
    """An executor whose completions are marked with the process's CPU time."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cpu_marks: list[float] = []

    def wait(self, handles: Any, timeout: float) -> Any:
        done = self.inner.wait(handles, timeout)
        if done is not None:
            self.cpu_marks.append(time.process_time())
        return done

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def child_rolling(config: Path, slots: int, nodes_out: Path) -> dict[str, Any]:
    """The real driver on the rolling forest of `config` at `slots` simulated slots until the
    forest ends; every node's id, parent, idea, kind, stage, params and status to `nodes_out`."""
    from rich.console import Console

    from engine.events import IdeaAdmitted
    from engine.llm.config import ProviderConfig
    from silva.config import load_config
    from silva.lifecycle import create_run, execute
    from silva.plan import PlanExecutor, PlannedIdeation, PlanSettings, Source
    from silva.progress import Progress

    cfg = load_config(config)
    assert cfg.llm is not None and cfg.ideation is not None and cfg.ideation.max_ideas is not None
    # The CPU pool as wide as the forest, so no paper queues for it: with the default 2 papers at
    # a time, 100 ideas' papers queued to the 24-hour budget while the slots stood empty.
    pool = {"max_in_flight": slots, "cpu_jobs": cfg.ideation.max_ideas}
    # The config's models on scripted providers, unprobed, as `silva plan` opens them: no job calls one.
    scripted = {name: ProviderConfig(kind="scripted") for name in cfg.llm.providers}
    cfg = cfg.model_copy(
        update={
            "executor": cfg.executor.model_copy(update=pool),
            "llm": cfg.llm.model_copy(update={"providers": scripted, "probe": False}),
            "ideation": PlannedIdeation.model_validate(cfg.ideation.model_dump()),
        }
    )
    _, journal = create_run(cfg.model_copy(update={"writeup": None}))  # no TeX: nothing is typeset
    settings = PlanSettings.model_validate({"durations": {"default": {"median_s": 1200.0, "sigma": 0.75}}})
    sim = Marked(PlanExecutor(journal, Source(settings, None), 0, cfg.budgets, {}))
    start = time.process_time()
    with open(os.devnull, "w") as sink, Progress(Console(file=sink, force_terminal=False)) as progress:
        outcome = execute(cfg, journal, on_change=progress.update, executor=sim)
    took = time.process_time() - start
    nodes = [[n.id, n.parent_id, n.idea, n.kind, n.stage, n.params, str(n.status)] for n in journal]
    nodes_out.write_text(json.dumps(nodes))
    admitted = sum(1 for _ in journal.log.read(IdeaAdmitted))
    journal.log.close()
    return {
        "ideas_admitted": admitted,
        "slots": slots,
        "nodes": len(nodes),
        "completions": len(sim.cpu_marks),
        **cpu_per_completion(sim.cpu_marks),
        "driver_cpu_s": took,
        "driver_rss_mb": rss_mb(),
        "virtual_wall_h": round((sim.inner.now - sim.inner.start) / 3600, 2),
        "outcome": outcome.status,
        "message": outcome.message[:200],
    }


def rolling_row(args: argparse.Namespace) -> None:
    """A rolling forest of up to `--rolling` ideas on `--wide-slots` simulated slots, from an empty
    journal to its end: driver CPU per completion in each fifth (key `rolling` of --label)."""
    sys.path.insert(1, str(REPO / "bench"))
    from bench_plan import write_rolling_config

    work = args.work / f"rolling-{args.rolling}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    config = write_rolling_config(work, args.rolling)
    nodes = args.work / f"rolling-{args.rolling}-{args.label}-nodes.json"
    try:
        row = in_child(args.code, "rolling", str(config), str(args.wide_slots), str(nodes))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    row |= {"load_avg": os.getloadavg()[0], "cpus": os.cpu_count(), "code": str(args.code)}
    row["nodes_file"] = str(nodes)
    print(json.dumps(row), flush=True)
    save(args.label, row, key="rolling")


def matrix(args: argparse.Namespace) -> dict[str, Any]:
    """Driver CPU per completion for forests of `--ideas` template ideas at `--matrix-slots`
    slots, on an empty journal and on one of `--big-journal` nodes; then one idea whose tuning
    stage has `--stage-nodes` nodes. Each row in its own process, journals on tmpfs."""
    rows: dict[str, Any] = {"code": str(args.code), "cpus": os.cpu_count(), "rows": []}
    journals = []
    for n in (0, args.big_journal):
        run = args.work / f"run-{n}"
        if not (run / "events.jsonl").is_file():
            print(f"generating {n} nodes ...", flush=True)
            print(" ", in_child(args.code, "generate", str(args.work), str(n)), flush=True)
        journals.append((n, run))
    for n, run in journals:
        for ideas in (int(i) for i in args.ideas.split(",")):
            for slots in (int(s) for s in args.matrix_slots.split(",")):
                copy = copy_run(run, args.work)
                try:
                    row = in_child(
                        args.code, "forest", str(copy), str(ideas), str(slots), str(args.completions_cap)
                    )
                finally:
                    shutil.rmtree(copy, ignore_errors=True)
                row |= {"journal_nodes": n, "load_avg": os.getloadavg()[0]}
                rows["rows"].append(row)
                print(json.dumps(row), flush=True)
                save(args.label, rows, key="matrix")
    stage_run = args.work / f"stage-{args.stage_nodes}"
    stages = tuple((s, k, args.stage_nodes if s == "hyperparameter" else n) for s, k, n in STAGES)
    for slots in (int(s) for s in args.stage_slots.split(",")):
        in_child(args.code, "generate-stage", str(args.work), str(args.stage_nodes))
        row = in_child(args.code, "forest", str(stage_run), "1", str(slots), "0")
        row |= {"stage_nodes": args.stage_nodes, "load_avg": os.getloadavg()[0], "stages": stages}
        rows["rows"].append(row)
        print(json.dumps(row), flush=True)
        save(args.label, rows, key="matrix")
    return rows


def in_child(code: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, __file__, "--code", str(code), "--child", *args],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_status(code: Path, run: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `silva status` in a fresh process, start-up included."""
    script = "import sys; from silva.cli.main import main; raise SystemExit(main(['status', sys.argv[1]]))"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", script, str(run)],
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"silva status failed:\n{out.stderr[-3000:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tracking_rows(args: argparse.Namespace) -> None:
    """The same continuation of the same journal, without and with a tracker (docs/tracking.md):
    the follower reads the journal in its own process, so the driver's CPU should not change."""
    n = int(args.sizes.split(",")[0])
    run = args.work / f"run-{n}"
    if not (run / "events.jsonl").is_file():
        print(" ", in_child(REPO, "generate", str(args.work), str(n)), flush=True)
    rows: dict[str, Any] = {"nodes": n, "cpus": os.cpu_count()}
    for mode in ("off", "mlflow"):
        copy = copy_run(run, args.work)
        rows[mode] = in_child(args.code, "driver", str(copy), str(args.completions), str(args.slots), mode)
        rows[mode]["load_avg"] = os.getloadavg()[0]
        shutil.rmtree(copy, ignore_errors=True)
        print(f"tracking {mode}: {json.dumps(rows[mode])}", flush=True)
    save(args.label, rows, key="tracking")


def wide_row(args: argparse.Namespace) -> None:
    """A forest of `--wide` fresh template ideas on `--wide-slots` simulated slots, from an empty
    journal to the forest's end: driver CPU per completion in each fifth (key `wide` of --label)."""
    ideas, slots = args.wide, args.wide_slots
    run = args.work / f"forest-{ideas}"
    if not (run / "events.jsonl").is_file():
        print(" ", in_child(REPO, "generate-forest", str(args.work), str(ideas)), flush=True)
    copy = copy_run(run, args.work)
    try:
        row = in_child(args.code, "forest", str(copy), str(ideas), str(slots), "0")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    row |= {"load_avg": os.getloadavg()[0], "cpus": os.cpu_count(), "code": str(args.code)}
    print(json.dumps(row), flush=True)
    save(args.label, row, key="wide")


def copy_run(run: Path, where: Path) -> Path:
    target = where / f"{run.name}-copy"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(run, target)
    return target


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--completions", type=int, default=2000, help="completions measured per size")
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--big-slots", type=int, default=1000, help="slots of benchmark (c)")
    ap.add_argument("--big-completions", type=int, default=3000)
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout to measure")
    ap.add_argument("--label", default="current", help="key of these figures in driver.json")
    ap.add_argument(
        "--work",
        type=Path,
        default=Path("/dev/shm/silva-bench-driver"),
        help="where the journals are kept (tmpfs; reused between runs)",
    )
    ap.add_argument(
        "--disk", type=Path, default=Path(tempfile.gettempdir()), help="an on-disk folder for (c)"
    )
    ap.add_argument(
        "--matrix",
        action="store_true",
        help="driver CPU per completion across forest sizes and slots (key `matrix` of --label)",
    )
    ap.add_argument("--ideas", default="32,64", help="--matrix: forest sizes")
    ap.add_argument("--matrix-slots", default="64,256,1000", help="--matrix: slot counts")
    ap.add_argument("--big-journal", type=int, default=100000, help="--matrix: nodes already journaled")
    ap.add_argument("--completions-cap", type=int, default=0, help="--matrix: stop after (0: whole run)")
    ap.add_argument("--stage-nodes", type=int, default=2000, help="--matrix: one idea's tuning stage")
    ap.add_argument("--stage-slots", default="64", help="--matrix: slots of the one-idea run")
    ap.add_argument(
        "--tracking",
        action="store_true",
        help="driver CPU per completion with the MLflow follower off and on, on the first --sizes journal",
    )
    ap.add_argument("--wide", type=int, default=0, help="a forest of this many fresh ideas, by fifths")
    ap.add_argument("--wide-slots", type=int, default=10000, help="--wide, --rolling: simulated slots")
    ap.add_argument(
        "--rolling", type=int, default=0, help="a rolling forest admitting up to this many ideas, by fifths"
    )
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return ap


def run_child(what: str, rest: list[str]) -> None:
    """One measurement or journal generation, asked for by `in_child`; prints its JSON row."""
    if what == "open":
        print(json.dumps(child_open(Path(rest[0]))))
    elif what == "driver":
        print(json.dumps(child_driver(Path(rest[0]), int(rest[1]), int(rest[2]), *rest[3:4])))
    elif what == "forest":
        print(json.dumps(child_forest(Path(rest[0]), int(rest[1]), int(rest[2]), int(rest[3]))))
    elif what == "rolling":
        print(json.dumps(child_rolling(Path(rest[0]), int(rest[1]), Path(rest[2]))))
    elif what == "generate-stage":
        n = int(rest[1])
        stages = tuple((s, k, n if s == "hyperparameter" else c) for s, k, c in STAGES)
        run = write_run(Path(rest[0]), 0, live=1, stages=stages, name=f"stage-{n}")
        print(json.dumps({"run": str(run)}))
    elif what == "generate-forest":
        run = write_run(Path(rest[0]), 0, live=int(rest[1]), name=f"forest-{rest[1]}")
        print(json.dumps({"run": str(run)}))
    elif what == "generate":
        start = time.perf_counter()
        run = write_run(Path(rest[0]), int(rest[1]))
        print(json.dumps({"run": str(run), "generate_s": time.perf_counter() - start}))


def size_row(args: argparse.Namespace, run: Path, n: int) -> dict[str, Any]:
    """Benchmark (b) on the journal of `n` nodes, generated first when it is not there yet."""
    if not (run / "events.jsonl").is_file():
        print(f"generating {n} nodes ...", flush=True)
        print(" ", in_child(REPO, "generate", str(args.work), str(n)), flush=True)
    row = in_child(args.code, "open", str(run))
    row["status_s"], row["status_cpu_s"] = time_status(args.code, run)
    row["events_mb"] = (run / "events.jsonl").stat().st_size / 2**20
    row["load_avg"] = os.getloadavg()[0]
    row["driver"] = in_child(
        args.code, "driver", str(copy_run(run, args.work)), str(args.completions), str(args.slots)
    )
    return row


def slots_row(args: argparse.Namespace, run: Path) -> dict[str, Any]:
    """Benchmark (c): the driver at `--big-slots` slots on a copy of `run` on disk."""
    on_disk = copy_run(run, args.disk)
    try:
        row = in_child(args.code, "driver", str(on_disk), str(args.big_completions), str(args.big_slots))
        row["load_avg"] = os.getloadavg()[0]
        row["disk"] = str(args.disk)
    finally:
        shutil.rmtree(on_disk, ignore_errors=True)
    return row


def size_rows(args: argparse.Namespace) -> None:
    """Benchmark (b) on each `--sizes` journal, then (c) on the last one (key --label)."""
    sizes = [int(s) for s in args.sizes.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {
        "sizes": {},
        "code": str(args.code),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
    }
    run = args.work
    for n in sizes:
        run = args.work / f"run-{n}"
        row = size_row(args, run, n)
        figures["sizes"][str(n)] = row
        save(args.label, figures)  # a run cut short still leaves the sizes it measured
        print(f"{n}: {json.dumps(row)}", flush=True)
        shutil.rmtree(args.work / f"{run.name}-copy", ignore_errors=True)
    if args.big_slots:
        figures["slots"] = slots_row(args, run)
        print(f"{args.big_slots} slots: {json.dumps(figures['slots'])}", flush=True)
    save(args.label, figures)


def main() -> None:
    args = parser().parse_args()
    if args.child:
        what, *rest = args.child
        run_child(what, rest)
        return
    if not (args.wide or args.rolling or args.tracking or args.matrix):
        size_rows(args)
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        if args.rolling:
            rolling_row(args)
        elif args.wide:
            wide_row(args)
        elif args.tracking:
            tracking_rows(args)
        else:
            matrix(args)
    print(f"wrote {RESULTS}")


def save(label: str, figures: dict[str, Any], key: str = "") -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results["targets"] = TARGETS
    if key:
        results.setdefault(key, {})[label] = figures
    else:
        results[label] = figures
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    if "--code" in sys.argv:  # measure that checkout: its packages first on the path
        sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])
    else:
        sys.path.insert(0, str(REPO))
    main()
