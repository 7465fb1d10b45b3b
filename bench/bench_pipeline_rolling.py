"""The pipeline benchmark's rolling mode: the research factory for real on this machine. A rolling
forest (`ideation:`) on SLOTS slots for MINUTES minutes against bench_pipeline.py's fake
OpenAI-compatible server, every LLM call at the same latency (lognormal, median = ratio x the
experiments' median wall time in this run so far: see Latency): the scripted scientist's experiments
(lognormal sleeps inside real numpy code), a scripted ideation model (a new idea each time,
reflected on once, one literature search against a fake Semantic Scholar on 127.0.0.1, judged
novel), the offline paper writer (`writeup: {offline: true}`: templates, no LLM; it draws and
compiles the paper with LaTeX in the CPU pool, `executor.cpu_jobs` at once, beside the slots)
and a scripted LLM reviewer (`review:`, REVIEWS reviews and a meta-review per paper). The run
starts from the label-noise idea; ideation adds ideas whenever the trees cannot fill the slots;
`budgets.wall_clock_s` stops it at the deadline.

    .venv/bin/python bench/bench_pipeline_rolling.py --slots 4 --ratio 1 --minutes 20
    .venv/bin/python bench/bench_pipeline_rolling.py --read RUN_DIR   # a run kept with --keep

Reported (bench/results/pipeline_rolling.json): utilization as `silva status` computes it and
of slot-holding jobs only, over the run and over its steady part (from the first moment every
slot was held to the end), and of experiments alone (no aggregation), the slot time by what held
it, the CPU pool's time (papers), the idle slot time per minute and by its cause (idle_causes),
ideas admitted / retired / published / rejected, when each reviewed manuscript appeared, nodes,
LLM calls and dollars per kept node (tokens priced as bench_pipeline's PRICED_AS), and the load
average at the start, the end and sampled during the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]

import yaml  # noqa: E402
from bench_pipeline import PRICED_AS, fake_llm, llm_config, load_sampled, saved_median  # noqa: E402

from engine.eventlog import EVENTS_FILE  # noqa: E402
from engine.events import AttemptCancelled, AttemptFinished, AttemptLost, AttemptStarted, StepFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from engine.totals import HOLDING_STEPS  # noqa: E402
from silva import lifecycle  # noqa: E402
from silva.config import load_config  # noqa: E402
from silva.cost import throughput  # noqa: E402
from silva.rolling import ideation_counts  # noqa: E402
from tests.ideation.fake_literature import fake_literature  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer, Recorded, Reply  # noqa: E402
from tests.review.papers import META, review_answer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "pipeline_rolling.json"
REVIEWS = 3
STAGE_NAMES = ("preliminary", "hyperparameter", "agenda", "ablation")
# Ideas differ by their mechanism (and a number): TF-IDF similarity between two of the first 36
# is at most 0.39, under the forest's duplicate threshold (0.8), so each is admitted; the 37th
# repeats the first's mechanism (0.90: a duplicate; 12 mechanisms ended ideation at 17 minutes).
MECHANISMS = (
    "small-loss sample filtering",
    "bootstrapped soft targets",
    "symmetric cross-entropy",
    "co-teaching with two peers",
    "early-stopped memorisation probes",
    "per-class confidence thresholds",
    "mixup interpolation of inputs",
    "gradient clipping per sample",
    "entropy-regularised confidence",
    "noise-transition matrix estimation",
    "prototype distance relabelling",
    "ensemble disagreement weighting",
    "truncated quadratic loss",
    "curriculum by margin",
    "nearest-neighbour vote cleaning",
    "spectral outlier removal",
    "focal reweighting",
    "peer prediction penalty",
    "dropout consistency voting",
    "self-distillation from snapshots",
    "kernel density label audit",
    "robust polynomial features",
    "cluster-wise majority relabel",
    "influence-function pruning",
    "trimmed mean gradients",
    "temperature-scaled pseudo labels",
    "active relabelling by uncertainty",
    "random projection bagging",
    "isotonic calibration of scores",
    "median-of-means training",
    "conformal noisy set rejection",
    "Huberised logistic loss",
    "weighted feature whitening",
    "stochastic weight averaging",
    "label propagation on graphs",
    "contrastive input augmentation",
)
IDEATION_SCHEMAS = ("IdeaDraft", "Reflection", "NoveltyStep")
DOCUMENTS = ("paper", "review", "selection")  # nodes that are no experiment
CPU_POOL = ("paper", "aggregation")  # their jobs run in the CPU pool (`executor.cpu_jobs`), no slot


class Ideation:
    """The scripted ideation model: the k-th idea asked for is new (its own mechanism and number),
    one reflection accepts it, the novelty judge searches once and then calls it novel."""

    def __init__(self) -> None:
        self.k = 0
        self.lock = threading.Lock()

    def draft(self) -> dict[str, Any]:
        with self.lock:
            k, self.k = self.k, self.k + 1
        mech = MECHANISMS[k % len(MECHANISMS)]
        return {
            "name": f"{mech.split()[0].replace('-', '_')}_{k}",
            "title": f"{mech.capitalize()} (variant {k}) for linear classifiers under label noise",
            "hypothesis": f"{mech.capitalize()} raises clean validation accuracy under 30% label noise.",
            "abstract": f"We test whether {mech} counters flipped labels in a linear model, variant {k}.",
            "experiments": [f"baseline vs {mech} at 30% noise", "sweep the noise rate"],
            "risks": ["small effect"],
            "metrics": [{"name": "val_accuracy", "direction": "maximize", "primary": True}],
            "interestingness": 6,
            "novelty": 6,
            "feasibility": 8,
        }

    def __call__(self, schema: str, text: str) -> dict[str, Any]:
        if schema == "IdeaDraft":
            return self.draft()
        if schema == "Reflection":
            idea = json.loads(text.split("Your idea:\n", 1)[1].split("\n\nCriticise", 1)[0])
            return {"critique": "clear and feasible", "idea": idea, "done": True}
        title = text.split("Title: ", 1)[1].split("\n", 1)[0]
        if "Give the first search query" in text:
            return {"decision": "search", "query": title[:150]}
        return {"decision": "novel", "reason": "no found paper tests this mechanism", "closest": []}


class Latency:
    """Every LLM call's latency: lognormal (sigma 1, capped at 8 x its median), median = ratio x
    the experiments' median wall time. `live`: this run's median so far, read from its journal
    every POLL_S (the saved median until the first experiment finishes), so the LLM keeps pace
    with experiments that the machine's load stretches; else the saved median throughout."""

    POLL_S = 10.0

    def __init__(self, ratio: float, saved_s: float, live: bool, seed: int) -> None:
        self.ratio, self.experiment_s, self.live = ratio, saved_s, live
        self.rng, self.lock = random.Random(seed), threading.Lock()
        self.walls: list[float] = []
        self.kinds: dict[str, str] = {}
        self.done = threading.Event()
        self.medians: list[float] = []  # the LLM median at each poll

    def delay(self) -> float:
        median = self.ratio * self.experiment_s
        with self.lock:
            return min(self.rng.lognormvariate(math.log(median), 1.0), 8 * median) if median else 0.0

    def watch(self, events: Path) -> None:
        if self.live:
            threading.Thread(target=self._poll, args=(events,), daemon=True).start()

    def _poll(self, events: Path) -> None:
        offset = 0
        while not self.done.wait(self.POLL_S):
            with events.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
            whole = chunk[: chunk.rfind(b"\n") + 1]
            offset += len(whole)
            for line in whole.splitlines():
                self._read(json.loads(line))
            if self.walls:
                self.experiment_s = statistics.median(self.walls)
            self.medians.append(round(self.ratio * self.experiment_s, 2))

    def _read(self, e: dict[str, Any]) -> None:
        if e["type"] == "node_created":
            self.kinds[e["node"]["id"]] = e["node"]["kind"]
        elif e["type"] == "attempt_finished" and self.kinds.get(e["node_id"]) not in DOCUMENTS:
            wall = (e["result"].get("execution") or {}).get("wall_s") or 0.0
            if wall > 0:
                self.walls.append(wall)


def fake_factory(server: FakeLLMServer, latency: Latency, seed: int) -> None:
    """bench_pipeline's scripted scientist, plus ideation and review answers, all after the same
    latency and billed the same way."""
    fake_llm(server, 0.0, seed)
    science = server.handler
    assert science is not None
    ideation = Ideation()

    def handle(rec: Recorded) -> Reply:
        body = rec.body
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        if "messages" not in body or not (schema in IDEATION_SCHEMAS or "Review" in schema):
            reply = science(rec)
            reply.delay_s = latency.delay() if "messages" in body else 0.0
            return reply
        text = "\n".join(m["content"] if isinstance(m["content"], str) else "" for m in body["messages"])
        if schema in IDEATION_SCHEMAS:
            data = ideation(schema, text)
        else:
            data = META if "meta-review" in text else review_answer()
        reply = Reply.json(data)
        reply.delay_s = latency.delay()
        reply.usage = (len(text) // 4 + 1, len(json.dumps(data)) // 4 + 1, 0)
        return reply

    server.handler = handle


def run_config(tmp: Path, url: str, literature: str, args: argparse.Namespace) -> Path:
    idea = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "examples" / "ideas" / "label_noise.yaml").read_text()
    )
    (tmp / "idea.yaml").write_text(yaml.safe_dump(idea))
    llm = llm_config(url, max_concurrency=256)
    llm["roles"] |= {r: {"model": "m", "max_tokens": 4096} for r in ("ideation", "review")}
    cfg = {
        "name": "rolling",
        "idea": "idea.yaml",
        "output_dir": str(tmp / "runs"),
        "replicates": 2,
        "seed": args.seed,
        "stages": {s: {"max_nodes": args.depth * args.slots} for s in STAGE_NAMES},
        "search": {"num_drafts": 2, "pipeline": True, "speculate": True},
        "budgets": {"wall_clock_s": args.minutes * 60, "node_timeout_s": 30},
        "executor": {"kind": "inprocess", "max_in_flight": args.slots},
        "sandbox": "none",
        "llm": llm,
        "ideation": {
            "topic": "Cheap defences of linear classifiers against label noise.",
            "metrics": [{"name": "val_accuracy", "direction": "maximize", "primary": True}],
            "reflections": 1,
            "novelty_rounds": 1,
            "literature": {"base_url": literature, "requests_per_s": 100, "max_retries": 0},
        },
        "writeup": {"offline": True, "literature": {"provider": "none"}},
        "review": {"reviews": REVIEWS},
    }
    (tmp / "run.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "run.yaml"


Span = tuple[float, float, str]  # (start, end, what)


def job_spans(j: Journal) -> tuple[list[Span], list[Span], list[Span]]:
    """What held a slot, (start, end, node kind); what only waited on the LLM, (start, end, step
    or node kind): a think or judge step, a stage's selection, a review; and what ran in the CPU
    pool beside the slots, (start, end, node kind): papers, journaled as holding no slot."""
    spans, waits, pool = list[Span](), list[Span](), list[Span]()
    started = dict[tuple[str, int], tuple[float, str, bool]]()
    for e in j.log.read(AttemptStarted, StepFinished, AttemptFinished, AttemptCancelled, AttemptLost):
        assert isinstance(e, AttemptStarted | StepFinished | AttemptFinished | AttemptCancelled | AttemptLost)
        key = (e.node_id, e.attempt)
        if isinstance(e, AttemptStarted):
            started[key] = (e.ts, e.step, e.holds)
        elif key in started:
            begun, step, holds = started.pop(key)
            kind = j.nodes[e.node_id].kind
            if holds and step in HOLDING_STEPS:
                spans.append((begun, e.ts, kind))
            elif kind in CPU_POOL:
                pool.append((begun, e.ts, kind))
            else:
                waits.append((begun, e.ts, step or kind))
    return spans, waits, pool


def idle_causes(
    held: list[Span], waits: list[Span], ideation: list[Span], slots: int, t0: float, end: float
) -> dict[str, float]:
    """Idle slot-seconds by what was in flight meanwhile. After the first minute (the run
    starting), an idle slot that a node in its think step will take waits on the code model
    ("think": the look-ahead was short of the LLM's latency); one that no node will take is
    short of work while the trees wait on judgements or stage selections, on ideation only,
    or on nothing at all."""
    out: dict[str, float] = defaultdict(float)
    for k in range(int(end - t0)):
        t = t0 + k + 0.5
        idle = slots - min(slots, sum(a <= t < b for a, b, _ in held))
        if not idle:
            continue
        if k < 60:
            out["first minute"] += idle
            continue
        steps = [what for a, b, what in waits if a <= t < b]
        thinking = min(idle, steps.count("think"))
        out["think"] += thinking
        if idle > thinking:
            short = (
                "short: judge or selection"
                if set(steps) - {"review", "think"}
                else "short: ideation only"
                if any(a <= t < b for a, b, _ in ideation)
                else "short: nothing in flight"
            )
            out[short] += idle - thinking
    return dict(out)


def slot_figures(j: Journal, slots: int, t0: float, end: float, ideation: list[Span]) -> dict[str, Any]:
    """Utilization of slot-holding jobs over the run and its steady part, and of experiments
    alone (not an aggregation, Silva's own mean and plot, which holds a slot); the slot time by
    what held it, the CPU pool's time by kind, the idle slot-seconds of each minute and by their
    cause."""
    spans, waits, pool = job_spans(j)
    by_kind: dict[str, float] = defaultdict(float)
    for a, b, kind in spans:
        by_kind[kind] += b - a
    pool_s: dict[str, float] = defaultdict(float)
    for a, b, kind in pool:
        pool_s[kind] += b - a
    step = 1.0
    held = [sum(a <= t0 + k * step < b for a, b, _ in spans) for k in range(int((end - t0) / step))]
    full = next((k for k, h in enumerate(held) if h >= slots), None)
    idle_per_min = [
        round(sum(slots - min(h, slots) for h in held[m : m + 60]) * step, 1) for m in range(0, len(held), 60)
    ]
    busy = sum(by_kind.values())
    steady = held[full:] if full is not None else []
    return {
        "utilization_held": round(busy / (slots * (end - t0)), 3),
        "utilization_experiments": round(
            sum(v for k, v in by_kind.items() if k != "aggregation") / (slots * (end - t0)), 3
        ),
        "steady_from_s": full,
        "utilization_steady": round(sum(min(h, slots) for h in steady) / (slots * len(steady)), 3)
        if steady
        else None,
        "slot_s_by_kind": {k: round(v, 1) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "cpu_pool_s_by_kind": {k: round(v, 1) for k, v in pool_s.items()},
        "idle_slot_s_per_minute": idle_per_min,
        "idle_slot_s_by_cause": idle_causes(spans, waits, ideation, slots, t0, end),
    }


def manuscripts(j: Journal, t0: float) -> list[dict[str, Any]]:
    """Each idea's paper and review, with the seconds into the run they finished."""
    out = []
    for n in j:
        if n.kind == "review" and n.finished_at is not None:
            paper = next(iter(j.in_stage("paper", idea=n.idea)), None)
            out.append(
                {
                    "idea": n.idea,
                    "paper_at_s": round(paper.finished_at - t0, 1) if paper and paper.finished_at else None,
                    "reviewed_at_s": round(n.finished_at - t0, 1),
                    "review": n.status.value,
                    "reason": n.reason,
                }
            )
    return sorted(out, key=lambda m: m["reviewed_at_s"])


def figures(run_dir: Path, slots: int) -> dict[str, Any]:
    cfg, j = lifecycle.open_run(run_dir, read_only=True)
    records = read_records(run_dir / LEDGER_FILE)
    t0 = j.sessions[0][0]
    end = j.sessions[-1][1]
    status = throughput(cfg, j, records, now=end)
    paid = [r for r in records if not r.cache_hit]
    experiments = [n for n in j if n.kind not in DOCUMENTS]
    walls = [n.execution.wall_s for n in experiments if n.execution is not None and n.execution.wall_s > 0]
    kept = sum(n.is_finished and n.status.value != "discarded" for n in j)
    dollars = sum(r.dollars for r in paid)
    ideation = [(r.ts - r.wall_s, r.ts, "") for r in paid if r.role == "ideation"]
    return {
        "wall_s": round(end - t0, 1),
        "utilization_status": round(status.utilization or 0.0, 3),
        **slot_figures(j, slots, t0, end, ideation),
        "ideas": ideation_counts(j),
        "manuscripts": manuscripts(j, t0),
        "nodes": len(j.nodes),
        "kept_nodes": kept,
        "discarded": sum(n.status.value == "discarded" for n in j),
        "experiment_median_s": round(statistics.median(walls), 2) if walls else None,
        "llm_calls": len(paid),
        "llm_calls_by_role": dict(sorted(_count(r.role for r in paid).items())),
        "llm_calls_per_kept_node": round(len(paid) / kept, 3) if kept else None,
        "llm_priced_as": PRICED_AS,
        "llm_dollars": round(dollars, 4),
        "llm_dollars_per_kept_node": round(dollars / kept, 5) if kept else None,
        "outcome": j.stop.reason if j.stop is not None else (j.finished.reason if j.finished else None),
    }


def _spread(xs: list[float]) -> dict[str, float]:
    return {"min": round(min(xs), 2), "median": round(statistics.median(xs), 2), "last": round(xs[-1], 2)}


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for i in items:
        out[i] += 1
    return out


@contextmanager
def _run_dir(keep: Path | None) -> Iterator[str]:
    """A temporary directory, or a new one under `keep` that stays (to read its journal later)."""
    if keep is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp
    else:
        keep.mkdir(parents=True, exist_ok=True)
        yield tempfile.mkdtemp(dir=keep)


def bench(args: argparse.Namespace) -> dict[str, Any]:
    saved = saved_median(args.slots)
    latency = Latency(args.ratio, saved, args.latency == "live", args.seed)
    load_start = os.getloadavg()
    with (
        FakeLLMServer() as server,
        fake_literature() as (literature, _),
        _run_dir(args.keep) as tmp,
        load_sampled() as load,
    ):
        fake_factory(server, latency, seed=args.seed)
        cfg = load_config(run_config(Path(tmp), server.url, literature, args))
        run_dir, journal = lifecycle.create_run(cfg)
        latency.watch(run_dir / EVENTS_FILE)
        started = time.monotonic()
        outcome = lifecycle.execute(cfg, journal)
        latency.done.set()
        row = {
            "slots": args.slots,
            "ratio": args.ratio,
            "minutes": args.minutes,
            "latency": args.latency,
            "saved_experiment_median_s": saved,
            # The LLM's median as the run went (live: every Latency.POLL_S; else the saved one).
            "llm_median_s": _spread(latency.medians or [args.ratio * saved]),
            "reviews_per_paper": REVIEWS,
            "stage_nodes": args.depth * args.slots,
            "run_outcome": outcome.status,
            "driver_s": round(time.monotonic() - started, 1),
            **figures(run_dir, args.slots),
            "llm_requests": len(server.requests),
        }
    row |= {
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "load_avg_mean": round(statistics.fmean(load), 2),
        "load_avg_max": round(max(load), 2),
        "cpus": os.cpu_count(),
    }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--ratio", type=float, default=1.0, help="LLM median / the experiments' median")
    ap.add_argument(
        "--latency",
        choices=["live", "saved"],
        default="live",
        help="the experiments' median of this run so far (live) or bench_pipeline's saved one",
    )
    ap.add_argument("--minutes", type=float, default=20.0, help="the run's wall-clock budget")
    ap.add_argument("--depth", type=int, default=2, help="search nodes per stage, in multiples of the slots")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="make the run directory under this one (kept)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--read", type=Path, default=None, help="only report on this run directory (no run)")
    args = ap.parse_args()
    if args.read is not None:
        print(json.dumps(figures(args.read, args.slots), indent=1))
        return
    row = bench(args)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(row, indent=2))
    print(json.dumps({k: v for k, v in row.items() if k not in ("manuscripts",)}, indent=1))
    print(f"results in {args.results}")


if __name__ == "__main__":
    main()
