"""DESIGN.md's layout rules, checked: Ray only in actors/ and cluster/, optional SDKs lazy."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "search", "sandbox", "actors", "writeup", "review", "cluster")


def test_only_actors_and_cluster_import_ray() -> None:
    pattern = re.compile(r"^\s*(import ray\b|from ray\b)", re.MULTILINE)
    offenders = [
        str(p.relative_to(ROOT))
        for pkg in PACKAGES if pkg not in ("actors", "cluster")
        for p in (ROOT / pkg).rglob("*.py") if pattern.search(p.read_text())
    ]
    assert offenders == []


def test_import_engine_needs_no_optional_sdk() -> None:
    code = (
        "import sys, engine.cli, engine.run, engine.llm, search.stages, sandbox; "
        "heavy = [m for m in ('ray', 'docker', 'anthropic', 'openai') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
