"""Where the real-model benchmarks work and what they leave: a scratch folder under bench/, emptied
first, and one results file under bench/results/, printed and written as the scratch goes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def scratch(name: str) -> Path:
    """bench/<name>.tmp, empty."""
    work = BENCH / f"{name}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def publish(name: str, out: dict[str, Any], work: Path) -> None:
    """bench/results/<name>.json written and printed; the scratch folder removed."""
    path = BENCH / "results" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    shutil.rmtree(work, ignore_errors=True)
