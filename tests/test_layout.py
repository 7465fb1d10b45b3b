"""The layout rules of docs/architecture.md, checked: the import-linter contracts (layers; Ray only in actors/
and cluster/) and optional SDKs imported lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout


def test_import_engine_needs_no_optional_sdk() -> None:
    code = (
        "import sys, silva.cli.main, silva.lifecycle, engine.llm, search.stages, sandbox; "
        "heavy = [m for m in ('ray', 'docker', 'anthropic', 'openai') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_stage_names_live_only_in_mode_declarations() -> None:
    """engine/ and silva/ treat stage names as opaque data."""
    out = subprocess.run(
        [
            "grep",
            "-rnE",
            '"(preliminary|hyperparameter|agenda|ablation)"',
            "engine",
            "silva",
            "--include=*.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.stdout == ""


MAX_FUNCTION_LINES = 60  # docs/architecture.md: a function does one thing
SOURCE_DIRS = (
    "silva",
    "engine",
    "search",
    "sandbox",
    "actors",
    "writeup",
    "review",
    "cluster",
    "bench",
    "examples",
)


def test_no_function_of_silva_is_over_60_lines() -> None:
    """Counted from `def` to its last line, over every non-test module (benchmarks and examples too)."""
    import ast

    long = []
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if any(part.endswith(".tmp") for part in path.relative_to(ROOT).parts):
                continue  # a benchmark's scratch runs
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split these into functions that each do one thing:\n" + "\n".join(long)
