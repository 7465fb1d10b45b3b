"""The file contract between Silva and an experiment (docs/contract.md).

In the attempt's workspace (its working directory) the experiment finds `silva_params.json`
and writes `results.json`. Metrics are read from that file, never parsed from printed text.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, Field, Strict, ValidationError

from engine.node import MetricSpec, MetricValue
from sandbox.base import FileTooLarge, Sandbox

PARAMS_FILE = "silva_params.json"
RESULTS_FILE = "results.json"
MAX_RESULTS_BYTES = 1_000_000  # metrics and a list of artifact names: far below this


class ResultsFile(BaseModel):
    # Strict: true/false and "1.5" are not metrics (the in-sandbox parser refuses them too).
    metrics: dict[str, Annotated[float, Strict()]]
    artifacts: list[str] = Field(default_factory=list, description="workspace-relative files to keep")
    notes: str = ""


def params_payload(
    params: dict[str, Any], *, seed: int | None, node_id: str, stage: str, attempt: int, **extra: Any
) -> bytes:
    """`extra`: operator-specific keys (e.g. `split` for held-out evaluation)."""
    payload = {
        "params": params,
        "seed": seed,
        "node_id": node_id,
        "stage": stage,
        "attempt": attempt,
        **extra,
    }
    return json.dumps(payload, indent=2).encode()


def parse_results(
    raw: bytes | None, specs: list[MetricSpec]
) -> tuple[list[MetricValue], ResultsFile | None, str]:
    """Metrics, the parsed file, and an error ('' when every declared metric is present and finite)."""
    if raw is None:
        return [], None, f"no {RESULTS_FILE} written"
    try:
        results = ResultsFile.model_validate_json(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return [], None, f"{RESULTS_FILE} is invalid at {where or 'top level'}: {first['msg']}"
    declared = {s.name: s for s in specs}
    # JSON has no NaN or infinity: a non-finite value is left out (null in exports) and named below.
    values = [
        MetricValue(name=name, value=value, direction=declared[name].direction if name in declared else None)
        for name, value in results.metrics.items()
        if math.isfinite(value)
    ]
    missing = [s.name for s in specs if s.name not in results.metrics]
    if missing:
        return values, results, f"{RESULTS_FILE} lacks declared metric(s): {', '.join(missing)}"
    bad = [name for name, value in results.metrics.items() if not math.isfinite(value)]
    if bad:
        shown = ", ".join(f"{name} = {results.metrics[name]}" for name in bad)
        return values, results, f"{RESULTS_FILE} has non-finite metric(s): {shown} (recorded as null)"
    return values, results, ""


class FileSource(Protocol):
    """What reading a capped file needs: a sandbox, or the host's view of a finished workspace."""

    def read_file(self, path: str, *, max_bytes: int = ...) -> bytes: ...


def read_capped(box: FileSource, name: str, files: list[str], max_bytes: int) -> tuple[bytes | None, str]:
    """A workspace file's bytes (None when it was not written) and why it could not be read ('' if
    it could): a file over `max_bytes`, a directory or an unreadable file is the node's bug."""
    if name not in files:
        return None, ""
    try:
        return box.read_file(name, max_bytes=max_bytes), ""
    except FileTooLarge as e:
        return None, f"{name} is {e.size} bytes, over the {max_bytes}-byte cap"
    except OSError as e:
        return None, f"{name} cannot be read: {e.strerror}"


def read_results(box: Sandbox, files: list[str]) -> tuple[bytes | None, str]:
    return read_capped(box, RESULTS_FILE, files, MAX_RESULTS_BYTES)
