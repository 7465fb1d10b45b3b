"""A synthetic run directory of any size, written straight to its event log: forests of several
ideas, every stage of the plan, buggy and running nodes, decisions, replicates, aggregates,
plots, optionally each stage's aggregate.json (seed values per group, as the aggregation writes it),
and a priced LLM ledger. For the view's tests and `bench/bench_view.py`."""

from __future__ import annotations

import json
import random
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import yaml

from engine.aggregate import AGGREGATE_FILE, mean_std
from engine.eventlog import EVENTS_FILE
from engine.llm.ledger import LEDGER_FILE, CallRecord
from engine.node import AttemptResult, ExecSummary, MetricValue, Node, Origin
from search.agentic.operators.outcome import OperatorOutcome
from search.agentic.operators.schemas import Judgement, PlotCritique
from silva.config import load_config
from tests.helpers import make_config, make_template

CODE = (
    "import json\n\nlr = {lr}\nfor step in range({steps}):\n    loss = 1.0 / (1 + step * "
    "lr)\njson.dump({{'metrics': {{'score': 1 - loss}}}}, open('results.json', 'w'))\n"
)


def png(width: int = 64, height: int = 40) -> bytes:
    """A small real PNG (a blue gradient) without an imaging library."""
    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in (40, 90 + x * 2, 200)) for _ in range(height)
    )

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class _Writer:
    def __init__(self, run_dir: Path, t0: float) -> None:
        self.fh = (run_dir / EVENTS_FILE).open("w", encoding="utf-8")
        self.seq, self.ts = 0, t0

    def __call__(self, type_: str, **data: Any) -> dict[str, Any]:
        self.ts += 0.5
        event = {"seq": self.seq, "ts": self.ts, "type": type_, **data}
        self.fh.write(json.dumps(event, default=str) + "\n")
        self.seq += 1
        return event


def make_run(
    tmp: Path,
    *,
    ideas: tuple[str, ...] = ("alpha", "beta"),
    search_nodes: int = 6,
    running: int = 0,
    plots: bool = True,
    seed: int = 0,
    aggregates: dict[str, dict[str, dict[str, list[float]]]] | None = None,
) -> Path:
    """A run directory under tmp/run: `search_nodes` per stage per idea (plus replicates and
    an aggregate per stage); the last `running` search nodes of the last idea still run, and
    then the run is live (not finished). `aggregates` (stage -> group label -> metric -> seed
    values, the first group the subject) becomes each idea's aggregate.json of that stage."""
    rng = random.Random(seed)
    template = make_template(tmp / "template")
    cfg = load_config(
        make_config(
            tmp,
            template,
            budgets={"wall_clock_s": 7200, "dollars": 50.0},
            stages={
                s: {"max_nodes": search_nodes}
                for s in ("preliminary", "hyperparameter", "agenda", "ablation")
            },
        )
    )
    run_dir = tmp / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    t0 = time.time() - 3600
    emit = _Writer(run_dir, t0)
    emit(
        "run_started",
        config=cfg.model_dump(mode="json"),
        format=2,
        metrics=[{"name": "score", "direction": "maximize", "primary": True}],
        stages=list(cfg.plan.names),
    )
    emit("session_started", resumed=False)
    ledger: list[CallRecord] = []
    count = 0

    def add(node: Node, status: str | None, value: float, plot: bool, groups: Any = None) -> Node:
        nonlocal count
        node.id, node.created_at = f"n{count:05d}", emit.ts
        count += 1
        emit("node_created", node=node.model_dump(mode="json"))
        emit("attempt_started", node_id=node.id, attempt=1)
        if status is None:
            return node
        ws = f"nodes/{node.id}/attempt-1"
        artifacts = []
        if plot:
            (run_dir / ws).mkdir(parents=True, exist_ok=True)
            (run_dir / ws / "curve.png").write_bytes(png())
            artifacts.append(f"{ws}/curve.png")
        if groups:
            (run_dir / ws).mkdir(parents=True, exist_ok=True)
            table = {
                label: {m: dict(zip(("mean", "std"), mean_std(v)), n=len(v)) for m, v in per.items()}
                for label, per in groups.items()
            }
            (run_dir / ws / AGGREGATE_FILE).write_text(json.dumps({"groups": table, "values": groups}))
            artifacts.append(f"{ws}/{AGGREGATE_FILE}")
        code = CODE.format(lr=round(value, 3), steps=10 + count % 7)
        outcome = OperatorOutcome(
            operator=node.kind,
            plots=artifacts,
            code_change="whole_file",
            judgement=Judgement(
                is_buggy=status == "buggy",
                reason="ran cleanly" if status == "good" else "NaN loss",
                summary=f"{node.kind} gave score {value:.3f}",
            ),
            plot_critique=PlotCritique(
                acceptable=True, reason="axes labelled", suggestions=["add error bars"]
            ),
            llm_calls=3,
        )
        result = AttemptResult(
            status=status,
            reason="" if status == "good" else "NaN in the loss at step 3",
            metrics=[MetricValue(name="score", value=value, direction="maximize")]
            if status == "good"
            else [],
            execution=ExecSummary(
                exit_code=0 if status == "good" else 1,
                wall_s=rng.uniform(1, 9),
                cpu_s=1.0,
                stdout_tail="epoch 1\n",
                stderr_tail="" if status == "good" else "ValueError: nan\n",
            ),
            artifacts=artifacts,
            workspace=ws,
            worker=f"host{count % 3}:{1000 + count % 5}",
            started_at=emit.ts,
            finished_at=emit.ts + 1,
            cost_usd=0.003,
            code=code,
            plan=f"{node.kind}: try lr={value:.3f}",
            outcome=outcome,
        )
        emit("attempt_finished", node_id=node.id, attempt=1, result=result.model_dump(mode="json"))
        for role, model in (
            ("code", "claude-sonnet-4-5"),
            ("feedback", "gpt-4o-mini"),
            ("vision", "gpt-4o-mini"),
        ):
            ledger.append(
                CallRecord(
                    ts=emit.ts,
                    role=role,
                    node_id=node.id,
                    stage=node.stage,
                    idea=node.idea,
                    provider=model.split("-")[0],
                    model=model,
                    input_tokens=900,
                    output_tokens=300,
                    dollars=0.002 if role == "code" else 0.0005,
                    key=f"{node.id}-{role}",
                )
            )
        node.status = status  # type: ignore[assignment]
        node.metrics = result.metrics
        return node

    for k, idea in enumerate(ideas):
        root: Node | None = None
        last_idea = k == len(ideas) - 1
        for s, stage in enumerate(cfg.plan.names):
            emit("stage_started", idea=idea, stage=stage, root=root.id if root else None)
            made: list[Node] = []
            for j in range(search_nodes):
                parent = rng.choice(made[-4:]) if made and rng.random() < 0.6 else root
                still = last_idea and s == len(cfg.plan.names) - 1 and j >= search_nodes - running
                status = None if still else ("buggy" if rng.random() < 0.2 else "good")
                kind = cfg.plan.stages[s].grows if parent is not None else "draft"
                made.append(
                    add(
                        Node(
                            parent_id=parent.id if parent else None,
                            stage=stage,
                            kind=kind,
                            idea=idea,
                            plan=kind,
                            origin=Origin(policy="best_first"),
                        ),
                        status,
                        rng.uniform(0.5, 0.95),
                        plots and j < 3,
                    )
                )
            if running and last_idea and s == len(cfg.plan.names) - 1:
                break
            good = [n for n in made if n.status == "good"]
            best = max(good, key=lambda n: n.metrics[0].value)
            emit(
                "stage_best",
                idea=idea,
                stage=stage,
                node_id=best.id,
                metric="score",
                value=best.metrics[0].value,
                reason=f"node budget of {search_nodes} used; best of {len(good)} good node(s) on score",
            )
            reps = [
                add(
                    Node(
                        parent_id=best.id,
                        stage=stage,
                        kind="replication",
                        idea=idea,
                        plan="seed replicate",
                        seed=i + 1,
                    ),
                    "good",
                    best.metrics[0].value - 0.01 * i,
                    False,
                )
                for i in range(2)
            ]
            agg = add(
                Node(
                    parent_id=best.id,
                    stage=stage,
                    kind="aggregation",
                    idea=idea,
                    refs=[best.id] + [r.id for r in reps],
                    plan="aggregate",
                ),
                "good",
                best.metrics[0].value,
                False,
                (aggregates or {}).get(stage),
            )
            emit(
                "stage_ended",
                idea=idea,
                stage=stage,
                best_node_id=best.id,
                aggregate_node_id=agg.id,
                reason=f"node budget of {search_nodes} used",
            )
            root = best
    if not running:
        emit("run_finished", reason="all 4 stages complete", kind="complete")
    emit.fh.close()
    # One cache hit: it saved what its first call cost.
    ledger.append(ledger[0].model_copy(update={"cache_hit": True, "dollars": 0.0}))
    (run_dir / LEDGER_FILE).write_text("".join(r.model_dump_json() + "\n" for r in ledger))
    return run_dir
