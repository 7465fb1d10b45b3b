"""`silva export RUN_DIR --format parquet`: nodes and events as Parquet tables pandas can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.blobs import inline
from engine.journal import Journal


def _node_row(n: Any) -> dict[str, Any]:
    row = n.model_dump(
        mode="json", exclude={"metrics", "execution", "origin", "outcome", "steps", "open_attempt"}
    )
    row["metrics"] = {m.name: m.value for m in n.metrics}
    row["execution"] = json.dumps(n.execution.model_dump(mode="json")) if n.execution else None
    row["origin"] = n.origin.model_dump_json()
    row["outcome"] = n.outcome.model_dump_json() if n.outcome is not None else None
    row["params"] = json.dumps(n.params, default=str, sort_keys=True)  # heterogeneous across nodes
    return row


def export_parquet(journal: Journal, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [_node_row(n) for n in journal]
    metric_names = sorted({k for r in rows for k in r["metrics"]})
    for r in rows:  # one float column per metric, null where a node has none
        metrics = r.pop("metrics")
        for name in metric_names:
            r[f"metric.{name}"] = metrics.get(name)
    nodes = pa.Table.from_pylist(rows) if rows else pa.table({"id": pa.array([], pa.string())})
    events = pa.Table.from_pylist(
        [
            {
                "seq": e["seq"],
                "ts": e["ts"],
                "type": e["type"],
                "node_id": e.get("node_id") or e.get("node", {}).get("id"),
                "data": json.dumps(
                    inline({k: v for k, v in e.items() if k not in ("seq", "ts", "type")}), default=str
                ),
            }
            for e in journal.log.events
        ]
    )
    paths = [out_dir / "nodes.parquet", out_dir / "events.parquet"]
    pq.write_table(nodes, paths[0])
    pq.write_table(events, paths[1])
    return paths
