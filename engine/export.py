"""`silva export RUN_DIR --format parquet`: nodes and events as Parquet tables pandas can read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic_core import PydanticSerializationError

from engine.blobs import BlobMissing
from engine.events import Event, NodeCreated
from engine.journal import Journal


def _node_row(n: Any) -> dict[str, Any]:
    try:
        return _row(n)
    except PydanticSerializationError as e:  # a payload's blob (engine/blobs.py) is missing or damaged
        cause = str(e).partition("BlobMissing: ")[2] or str(e)
        raise BlobMissing(
            f"node {n.id}: {cause}; restore the run's blobs/ folder from a copy of the run (it travels "
            "with events.jsonl), then export again"
        ) from None


def _row(n: Any) -> dict[str, Any]:
    row: dict[str, Any] = n.model_dump(
        mode="json", exclude={"metrics", "execution", "origin", "outcome", "steps", "open_attempt"}
    )
    row["metrics"] = {m.name: m.value for m in n.metrics}
    row["execution"] = json.dumps(n.execution.model_dump(mode="json")) if n.execution else None
    row["origin"] = n.origin.model_dump_json()
    row["outcome"] = n.outcome.model_dump_json() if n.outcome is not None else None
    row["params"] = json.dumps(n.params, default=str, sort_keys=True)  # heterogeneous across nodes
    return row


def _event_row(e: Event) -> dict[str, Any]:
    try:  # payloads as their text; the extra fields of an older run's event included
        data = e.model_dump(mode="json", exclude={"seq", "ts", "type"})
    except PydanticSerializationError as err:
        cause = str(err).partition("BlobMissing: ")[2] or str(err)
        raise BlobMissing(f"event {e.seq} ({e.type}): {cause}") from None
    node_id = data.get("node_id") or (e.node.id if isinstance(e, NodeCreated) else None)
    return {
        "seq": e.seq,
        "ts": e.ts,
        "type": e.type,
        "node_id": node_id,
        "data": json.dumps(data, default=str),
    }


def export_parquet(journal: Journal, out_dir: Path) -> list[Path]:
    """Both tables are built before anything is written, and each file is renamed into place
    whole: a run that cannot be exported leaves no partial output."""
    rows = [_node_row(n) for n in journal]
    metric_names = sorted({k for r in rows for k in r["metrics"]})
    for r in rows:  # one float column per metric, null where a node has none
        metrics = r.pop("metrics")
        for name in metric_names:
            r[f"metric.{name}"] = metrics.get(name)
    nodes = pa.Table.from_pylist(rows) if rows else pa.table({"id": pa.array([], pa.string())})
    events = pa.Table.from_pylist([_event_row(e) for e in journal.log.events])
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "nodes.parquet", out_dir / "events.parquet"]
    for table, path in zip((nodes, events), paths, strict=True):
        part = path.with_name(f".{path.name}.part")
        try:
            pq.write_table(table, part)
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    return paths
