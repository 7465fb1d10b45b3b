"""Pipeline benchmarks (docs/engine.md): do accelerators wait for the LLM, and does look-ahead cost
search quality? Writes bench/results/pipeline.json and prints two tables.

(a) Utilization of the four-stage agentic search, one idea, 4 and 16 slots, LLM latency / experiment
    median = 0, 1 and 4, with the pipeline (think / run / judge steps, look-ahead, speculation) on
    and off; LLM calls are never sent twice (hedging is off by default; `--hedge on` or `uncapped`
    turns it on for an A/B). The LLM is a fake OpenAI-compatible server on 127.0.0.1 that answers
    every schema with the scripted scientist's content after a lognormal latency; experiments sleep lognormal
    durations inside real numpy code. Utilization = experiment time (the run's wall time) /
    (slots x makespan). The ratio is taken against the experiments' measured median wall time
    (sleep plus the real code's own time, measured in the ratio-0 runs), not the sleep alone.
    Each stage has 2 x slots search nodes (`--depth` changes the multiple): a stage of 8 could
    fill at most half of 16 slots.
    Beside each figure: the most any scheduler could reach on that run's tree with its step
    durations (the longest root-to-node chain of think, run and judge steps bounds the makespan
    from below), and the utilization of kept work only (discarded speculation left out).
    `--repeats 0 1 2` runs each setting with several run and latency seeds.
    What the utilization costs: the fake server counts tokens as a real API would bill them (4
    characters a token of the prompts the engine builds and of the answers), priced at PRICED_AS's
    list price in engine/llm/prices.py; each row has the LLM dollars per kept node. The machine's
    load average is sampled during each run (2 shared cores: other work stretches the experiments).
    Then forest rows (`--forest IDEAS:RATIO ...`, default 12 ideas at ratio 1 and 16 at ratio 4,
    4 slots, pipeline on): K copies of the idea, each its own four stages of the same size,
    sharing the slots by the `fair` allocation. One idea's tree bounds its makespan by its
    longest chain (docs/engine.md, "How close to the possible"); a forest shows what the
    scheduler does where the work allows the slots to be full. `--ideas K` runs the main
    settings as a forest of K instead.
(d) Best noise-free quality reached for a fixed node budget by the offline template search at 1, 4
    and 16 slots, without and with look-ahead (proposals made before a slot frees), over seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.events import AttemptFinished, AttemptStarted, StepFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from engine.llm.prices import DEFAULT_MODELS  # noqa: E402
from engine.node import Node  # noqa: E402
from silva import lifecycle  # noqa: E402
from silva.config import load_config  # noqa: E402
from tests.helpers import load_file, make_config, make_template  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer, Recorded, Reply  # noqa: E402
from tests.search.agentic_helpers import context_of  # noqa: E402

DEFAULT_RESULTS = RESULTS = Path(__file__).parent / "results" / "pipeline.json"
MEDIAN_S, SIGMA, CAP_S = (
    0.5,
    1.0,
    7.5,
)  # experiments: lognormal, median 0.5 s (scaled down from 4 s; cap 60 s)
STAGE_NAMES = ("preliminary", "hyperparameter", "agenda", "ablation")
# The fake model's tokens are priced as this real model's (a mid-priced one, $3 / $15 per Mtok).
PRICED_AS = "claude-sonnet-4-5"
CHARS_PER_TOKEN = 4
# `--hedge`: off is the default config (docs/llm.md, Hedged requests); on is `hedge: {}` with its
# 5% spend cap; uncapped is what the default was before: blocking calls sent twice at once, no cap.
HEDGE: dict[str, dict[str, Any] | None] = {
    "off": None,
    "on": {},
    "uncapped": {"at_once_when_blocking": True, "max_extra_fraction": None},
}


def stages(slots: int, depth: int = 2) -> dict[str, dict[str, int]]:
    """Each stage `depth` x slots search nodes: how many waves of the slots a stage holds."""
    return {s: {"max_nodes": depth * slots} for s in STAGE_NAMES}


ROLE_OF = {"Proposal": "code", "Judgement": "feedback", "PlotCritique": "vision", "BestChoice": "selection"}


@dataclass
class Msg:
    role: str
    text: str
    images: list[bytes] = field(default_factory=list)


@dataclass
class Call:
    role: str
    messages: list[Msg]
    context: dict[str, str] = field(default_factory=dict)


def scientist() -> Any:
    return load_file(ROOT / "examples" / "ideas" / "scripted_scientist.py", "scripted_scientist")


def llm_config(url: str, **provider: Any) -> dict[str, Any]:
    """The run config's `llm:` for the fake OpenAI-compatible server at `url`: one model in every role."""
    return {
        "providers": {"fake": {"kind": "openai_compatible", "base_url": f"{url}/v1", **provider}},
        "models": {
            "m": {
                "provider": "fake",
                "model": "fake-model",
                "price": DEFAULT_MODELS[PRICED_AS][1].model_dump(),
                "capabilities": {"json_schema": True, "vision": False},
            }
        },
        "roles": {r: {"model": "m", "max_tokens": 2048} for r in ("code", "feedback", "selection")},
        # The start-of-run probe would time the fake server's scripted delay as the model's speed.
        "probe": False,
    }


def fake_llm(server: FakeLLMServer, median_s: float, seed: int) -> None:
    """The server answers as the scripted scientist would, after lognormal(median_s) seconds."""
    responder = scientist().Responder(sleep=(MEDIAN_S, SIGMA), plots=False)
    rng = random.Random(seed)

    def handle(rec: Recorded) -> Reply:
        body = rec.body
        if "messages" not in body:  # a cancelled call's client hung up before its body came
            return Reply.error(400)
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        messages = [
            Msg(
                m["role"],
                m["content"]
                if isinstance(m["content"], str)
                else "\n".join(p.get("text", "") for p in m["content"] if p.get("type") == "text"),
            )
            for m in body["messages"]
        ]
        role = ROLE_OF.get(schema, "feedback")
        user = next(m.text for m in messages if m.role == "user")
        data = json.loads(responder(Call(role, messages, context_of(role, user))))
        delay = min(rng.lognormvariate(math.log(median_s), SIGMA), 8 * median_s) if median_s else 0.0
        reply = Reply.json(data)
        reply.delay_s = delay
        # Billed as a real API would: the whole prompt in, the answer out.
        prompt = sum(len(m.text) for m in messages)
        reply.usage = (prompt // CHARS_PER_TOKEN + 1, len(json.dumps(data)) // CHARS_PER_TOKEN + 1, 0)
        return reply

    server.handler = handle


def idea_files(tmp: Path, ideas: int) -> dict[str, Any]:
    """The run config's idea(s): the label-noise idea, or `ideas` copies of it under names of their own."""
    idea = yaml.safe_load((ROOT / "examples" / "ideas" / "label_noise.yaml").read_text())
    if ideas == 1:
        (tmp / "idea.yaml").write_text(yaml.safe_dump(idea))
        return {"idea": "idea.yaml"}
    for i in range(ideas):
        (tmp / f"idea{i}.yaml").write_text(yaml.safe_dump({**idea, "name": f"{idea['name']}_{i}"}))
    return {"ideas": [f"idea{i}.yaml" for i in range(ideas)]}


def run_config(
    tmp: Path,
    url: str,
    slots: int,
    pipeline: bool,
    seed: int,
    depth: int = 2,
    ideas: int = 1,
    hedge: str = "off",
) -> Path:
    """The run config of one setting, written to `tmp`/run.yaml."""
    (tmp / "run.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "pipe",
                **idea_files(tmp, ideas),
                "output_dir": str(tmp / "runs"),
                "replicates": 2,
                "seed": seed,
                "stages": stages(slots, depth),
                "search": {"num_drafts": 2, "pipeline": pipeline, "speculate": pipeline},
                "budgets": {"wall_clock_s": 3600, "node_timeout_s": CAP_S * 4},
                "executor": {
                    "kind": "inprocess",
                    "max_in_flight": slots,
                    "lookahead": None if pipeline else 0,
                },
                "sandbox": "none",
                # Off is the engine before the pipeline: one job per node, no look-ahead, no speculation.
                # Neither sends a call twice unless `--hedge` says so: hedging is off by default.
                "llm": llm_config(url, max_concurrency=256, hedge=HEDGE[hedge]),
            }
        )
    )
    return tmp / "run.yaml"


def agentic_run(
    tmp: Path,
    url: str,
    slots: int,
    pipeline: bool,
    seed: int,
    depth: int = 2,
    ideas: int = 1,
    hedge: str = "off",
) -> dict[str, Any]:
    cfg = load_config(run_config(tmp, url, slots, pipeline, seed, depth, ideas, hedge))
    run_dir, journal = lifecycle.create_run(cfg)
    started = time.monotonic()
    outcome = lifecycle.execute(cfg, journal)
    makespan = time.monotonic() - started
    return {
        "slots": slots,
        "pipeline": pipeline,
        "hedge": hedge,
        "outcome": outcome.status,
        **run_figures(run_dir, slots, makespan),
    }


def run_figures(run_dir: Path, slots: int, makespan: float) -> dict[str, Any]:
    """A finished run's figures, read from its journal and its LLM ledger."""
    j = Journal.open(run_dir, read_only=True)
    walls = [n.execution.wall_s for n in j if n.execution is not None and n.execution.wall_s > 0]
    busy = sum(walls)
    # Discarded speculative work held its slot but bought nothing: utilization counts it (the
    # slot was busy), kept utilization does not.
    kept = sum(n.execution.wall_s for n in j if n.execution is not None and n.status.value != "discarded")
    work = sum(own_work_s(n) for n in j if n.execution is not None and n.execution.wall_s > 0)
    chain = critical_path_s(j)
    records = [r for r in read_records(run_dir / LEDGER_FILE) if not r.cache_hit]
    dollars = sum(r.dollars for r in records)
    kept_nodes = sum(n.is_finished and n.status.value != "discarded" for n in j)
    return {
        "nodes": len(j.nodes),
        "kept_nodes": kept_nodes,
        "makespan_s": round(makespan, 1),
        "experiment_s": round(busy, 1),
        "experiment_median_s": round(statistics.median(walls), 2) if walls else None,
        "utilization": round(busy / (slots * makespan), 3),
        "utilization_kept": round(kept / (slots * makespan), 3),
        # On this 2-core machine, 4 or 16 experiments at once contend for the cores and their wall
        # time stretches with the load (median 2 s on a quiet machine, 4 s on a busy one), which
        # would count as "busy". What a slot of its own would take: the CPU time plus the sleep.
        "work_s": round(work, 1),
        "utilization_work": round(work / (slots * makespan), 3),
        # The most any scheduler could reach on this run's tree and step durations: a node's
        # steps follow its parent's, so the makespan is at least the longest root-to-node chain.
        "critical_path_s": round(chain, 1),
        "utilization_bound": round(busy / (slots * max(chain, busy / slots)), 3),
        "speculative": sum(n.origin.speculative for n in j),
        "hedged_llm_copies": sum(r.hedge == "lost" for r in records),
        # What the utilization cost: the paid calls' tokens at PRICED_AS's list price, per node kept.
        "llm_priced_as": PRICED_AS,
        "llm_tokens_in": sum(r.input_tokens for r in records),
        "llm_tokens_out": sum(r.output_tokens for r in records),
        "llm_dollars": round(dollars, 4),
        "llm_dollars_per_kept_node": round(dollars / kept_nodes, 5) if kept_nodes else None,
        "discarded": sum(n.status.value == "discarded" for n in j),
    }


def own_work_s(n: Node) -> float:
    """An experiment's time on a slot of its own: its CPU time plus the sleep its code asks for
    (the scripted scientist writes it into CONFIG)."""
    m = re.search(r"['\"]sleep['\"]: ([0-9.]+)", n.code or "")
    assert n.execution is not None
    return n.execution.cpu_s + (float(m.group(1)) if m else 0.0)


def critical_path_s(j: Journal) -> float:
    """The longest chain of the run's tree: over every node, the time its own steps took (think,
    run, judge: each from its start to its end, every attempt) plus the part of its parent's
    chain it waited for. A child is proposed from its finished parent, or, grown by speculation
    from a leader whose judgement was still out, from its parent's finished run; so no
    scheduler, with any number of slots, finishes this tree with these step durations sooner."""
    own: dict[str, float] = {}
    to_run: dict[str, float] = {}  # a node's own time up to the end of its run step
    started: dict[tuple[str, int], float] = {}
    for e in j.log.read(AttemptStarted, StepFinished, AttemptFinished):
        assert isinstance(e, AttemptStarted | StepFinished | AttemptFinished)
        key = (e.node_id, e.attempt)
        if isinstance(e, AttemptStarted):
            started[key] = e.ts
        elif key in started:
            own[e.node_id] = own.get(e.node_id, 0.0) + e.ts - started.pop(key)
            if isinstance(e, StepFinished) and e.step == "run":
                to_run[e.node_id] = own[e.node_id]
    begins: dict[str, float] = {}  # the chain a node's first step waited for
    for n in j:  # in creation order: a parent before its children
        parent = j.nodes[n.parent_id] if n.parent_id else None
        if parent is None:
            begins[n.id] = 0.0
        elif parent.finished_at is not None and n.created_at < parent.finished_at and parent.id in to_run:
            begins[n.id] = begins[parent.id] + to_run[parent.id]
        else:
            begins[n.id] = begins[parent.id] + own.get(parent.id, 0.0)
    return max((begins[i] + own.get(i, 0.0) for i in begins), default=0.0)


@contextmanager
def load_sampled(every_s: float = 5.0) -> Iterator[list[float]]:
    """The 1-minute load average every `every_s` seconds while the block runs (and once at its end):
    the machine is shared, and its load stretches the experiments' wall time."""
    samples = [os.getloadavg()[0]]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every_s):
            samples.append(os.getloadavg()[0])

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        done.set()
        thread.join()
        samples.append(os.getloadavg()[0])


def saved_median(slots: int) -> float:
    """The experiments' median wall at this slot count, as its one-idea ratio-0 run without the
    pipeline measured it (saved in this results file, or else in the default one): ratios are of it."""
    saved = [
        r
        for f in (RESULTS, DEFAULT_RESULTS)
        if f.is_file()
        for r in json.loads(f.read_text()).get("utilization", [])
    ]
    return next(
        (
            r["experiment_median_s"]
            for r in saved
            if r["slots"] == slots
            and r["ratio"] == 0
            and not r["pipeline"]
            and r.get("ideas", 1) == 1
            and r.get("hedge", "off") == "off"
            and r.get("experiment_median_s")
        ),
        MEDIAN_S,
    )


def timed_run(
    args: argparse.Namespace, slots: int, ratio: float, pipeline: bool, repeat: int, experiment_median: float
) -> tuple[dict[str, Any], int, list[float]]:
    """One run of a setting against the fake LLM server: its row, the requests the server had and
    the load averages sampled during it."""
    with (
        FakeLLMServer() as server,
        tempfile.TemporaryDirectory() as tmp,
        load_sampled() as load,
    ):
        fake_llm(server, ratio * experiment_median, seed=slots * 10 + int(ratio) + 1000 * repeat)
        row = agentic_run(
            Path(tmp),
            server.url,
            slots,
            pipeline,
            seed=repeat,
            depth=args.depth,
            ideas=args.ideas,
            hedge=args.hedge,
        )
    return row, len(server.requests), load


def progress_line(row: dict[str, Any]) -> str:
    """A finished row, as the benchmark prints it."""
    return (
        f"  slots {row['slots']:>2} ideas {row['ideas']} ratio {row['ratio']:g} pipeline "
        f"{'on ' if row['pipeline'] else 'off'} hedge {row['hedge']} repeat {row['repeat']}: utilization "
        f"{row['utilization']:.2f} "
        f"({row['utilization_kept']:.2f} kept, {row['utilization_work']:.2f} uncontended) of at "
        f"most {row['utilization_bound']:.2f} ({row['nodes']} nodes, {row['makespan_s']} s, "
        f"longest chain {row['critical_path_s']} s, {row['hedged_llm_copies']} hedged LLM "
        f"copies, ${row['llm_dollars_per_kept_node']} of LLM per kept node at {PRICED_AS}'s "
        f"prices, {row['kept_nodes']} kept, {row['llm_requests']} LLM requests, load average "
        f"{row['load_avg']} (max {row['load_avg_max']}))"
    )


def bench_utilization(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for slots in args.slots:
        experiment_median = saved_median(slots)  # or this time's, once its ratio-0 run is in (below)
        for ratio in sorted(args.ratios):
            for pipeline, repeat in [(p, r) for r in args.repeats for p in args.pipeline]:
                row, requests, load = timed_run(args, slots, ratio, pipeline, repeat, experiment_median)
                if (
                    row["outcome"] == "interrupted"
                ):  # a signal stopped it: nothing measured, keep the saved row
                    raise SystemExit(
                        f"slots {slots} ratio {ratio:g}: the run was interrupted; rows so far in {RESULTS}"
                    )
                if (
                    ratio == 0
                    and not pipeline
                    and args.ideas == 1
                    and args.hedge == "off"
                    and row["experiment_median_s"]
                ):
                    experiment_median = row["experiment_median_s"]
                row.update(
                    ratio=ratio,
                    repeat=repeat,
                    llm_median_s=round(ratio * experiment_median, 2),
                    llm_requests=requests,
                )
                # The 1-minute load average during the run: its mean and its highest sample.
                row["load_avg"] = round(statistics.fmean(load), 2)
                row["load_avg_max"] = round(max(load), 2)
                row["cpus"] = os.cpu_count()
                row["depth"] = args.depth
                row["ideas"] = args.ideas
                rows.append(row)
                save(rows)
                print(progress_line(row), flush=True)
    return rows


def true_score(p: dict[str, Any]) -> float:
    """tests/helpers.py's template metric without its seed noise."""
    return (
        1.0 - (p["x"] - 0.3) ** 2 - 0.1 * p["y"] + (0.05 if p["method"] else 0.0) - (0.02 if p["ab"] else 0.0)
    )


def quality_run(tmp: Path, slots: int, lookahead: int, seed: int, budget: int) -> float:
    tpl = make_template(tmp / "tpl")
    path = make_config(
        tmp,
        tpl,
        seed=seed,
        replicates=1,
        stages={
            "preliminary": {"max_nodes": 1},
            "hyperparameter": {"max_nodes": budget},
            "agenda": {"max_nodes": budget // 2},
            "ablation": {"max_nodes": 1},
        },
        executor={"kind": "inprocess", "max_in_flight": slots, "lookahead": lookahead},
        search={"speculate": False},
    )
    cfg = load_config(path)
    run_dir, journal = lifecycle.create_run(cfg)
    lifecycle.execute(cfg, journal)
    j = Journal.open(run_dir, read_only=True)
    searched = [n for n in j if n.kind in ("hyperparameter", "method") and n.status.value == "good"]
    return max(true_score(n.params) for n in searched)


def bench_quality(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for slots in (1, 4, 16):
        for lookahead in (0, slots):
            scores = []
            for seed in range(args.seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    scores.append(quality_run(Path(tmp), slots, lookahead, seed, args.budget))
            mean = statistics.fmean(scores)
            half = 1.96 * statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else 0.0
            rows.append(
                {
                    "slots": slots,
                    "lookahead": lookahead,
                    "best_true_mean": round(mean, 4),
                    "ci95": [round(mean - half, 4), round(mean + half, 4)],
                    "seeds": len(scores),
                }
            )
            print(
                f"  slots {slots:>2} look-ahead {lookahead:>2}: best true score {mean:.4f} ± {half:.4f}",
                flush=True,
            )
    return rows


def save(rows: list[dict[str, Any]] | None = None, quality: list[dict[str, Any]] | None = None) -> None:
    """Merge into the results file: a row replaces the one of its (ideas, slots, ratio, pipeline,
    hedge, repeat), so a run cut short, or one of a few settings, keeps the figures measured before."""
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    key = lambda r: (  # noqa: E731
        r.get("ideas", 1),
        r["slots"],
        r["ratio"],
        r["pipeline"],
        r.get("hedge", "off"),
        r.get("repeat", 0),
    )
    merged = {key(r): r for r in old.get("utilization", [])} | {key(r): r for r in rows or []}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "setup": {
                    "experiment": f"lognormal(median {MEDIAN_S} s, sigma {SIGMA}) sleep inside real numpy "
                    f"code, cap {CAP_S} s",
                    "llm": "fake OpenAI-compatible server, lognormal(ratio x measured experiment median, "
                    "sigma 1), cap 8x",
                    "stages": "depth x slots search nodes each (depth 2 unless a row says otherwise), per "
                    "idea",
                    "replicates": 2,
                    "executor": "inprocess",
                    "sandbox": "none",
                    "llm_prices": f"tokens (prompt and answer characters / {CHARS_PER_TOKEN}) at "
                    f"{PRICED_AS}'s list price in engine/llm/prices.py (rows from before show "
                    "llm_priced_as; older ones were at $1 / $2 per Mtok and 12 / 7 tokens a call)",
                    "load_avg": "mean 1-minute load average sampled every 5 s during the run (older rows: "
                    "at its end)",
                },
                "utilization": sorted(merged.values(), key=key),
                "quality": quality if quality is not None else old.get("quality", []),
            },
            indent=2,
        )
    )


def forest_pair(text: str) -> tuple[int, float]:
    """`--forest` values: IDEAS:RATIO, e.g. 12:1."""
    ideas, _, ratio = text.partition(":")
    try:
        if int(ideas) >= 1 and float(ratio) >= 0:
            return int(ideas), float(ratio)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(
        f"{text!r}: expected IDEAS:RATIO, a whole number of ideas and a ratio, e.g. 12:1"
    )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, nargs="+", default=[4, 16])
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.0, 1.0, 4.0])
    ap.add_argument("--seeds", type=int, default=6, help="seeds of (d); 0 skips it")
    ap.add_argument("--pipeline", choices=["off", "on"], nargs="+", default=["off", "on"])
    ap.add_argument("--budget", type=int, default=24, help="tuning nodes per run in (d)")
    ap.add_argument(
        "--depth",
        type=int,
        default=2,
        help="search nodes per stage, in multiples of the slots (2: a stage is two waves)",
    )
    ap.add_argument(
        "--ideas",
        type=int,
        default=1,
        help="a forest of this many copies of the idea, each with stages of the same size (default: one "
        "idea)",
    )
    ap.add_argument(
        "--forest",
        nargs="*",
        type=forest_pair,
        default=[(12, 1.0), (16, 4.0)],
        metavar="IDEAS:RATIO",
        help="forest rows after (a), on 4 slots with the pipeline on; none: skip them",
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="where the rows go (another machine's figures in a file of their own)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        nargs="+",
        default=[0],
        help="run seeds of (a): each setting once per seed (the run's seed and the LLM latencies')",
    )
    ap.add_argument(
        "--hedge",
        choices=list(HEDGE),
        default="off",
        help="hedged LLM calls: off (the default config), on (`hedge: {}`, copies capped at 5%% of the "
        "spend), uncapped (blocking calls sent twice at once, no cap: the old default)",
    )
    args = ap.parse_args()
    args.pipeline = [p == "on" for p in args.pipeline]
    return args


def main() -> None:
    global RESULTS
    args = parse_args()
    RESULTS = args.results
    print("(a) utilization of the four-stage agentic search (experiment time / slots x makespan)")
    bench_utilization(args)
    for ideas, ratio in args.forest:
        print(f"(a) a forest of {ideas} ideas on 4 slots, ratio {ratio:g}")
        bench_utilization(
            argparse.Namespace(
                **{**vars(args), "slots": [4], "ratios": [ratio], "pipeline": [True], "ideas": ideas}
            )
        )
    if args.seeds:
        print(
            f"(d) best noise-free quality at a fixed node budget ({args.budget} tuning nodes), {args.seeds} "
            "seeds"
        )
        save(quality=bench_quality(args))
    print(f"results in {RESULTS}")


if __name__ == "__main__":
    main()
