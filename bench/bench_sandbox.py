"""Per-attempt overhead of each sandbox provider: open a fresh workspace, run a no-op, close.

Two no-ops: `true` (pure sandbox cost) and `python3 -c pass` (what an experiment pays before
its first line). Writes bench/results/sandbox.json and prints a table. Targets (docs/sandbox.md):
local <= 30 ms, docker <= 1.5 s, judged on the median of `true`.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox import Limits, SandboxProvider, SandboxUnavailable, get_provider

TARGETS_S = {"none": None, "local": 0.030, "docker": 1.5}
REPS = {"none": 50, "local": 50, "docker": 15}
NOOPS = {"true": ["true"], "python": ["python3", "-c", "pass"]}
RESULTS = Path(__file__).resolve().parent / "results" / "sandbox.json"


def available() -> dict[str, SandboxProvider]:
    providers: dict[str, SandboxProvider] = {}
    for name in ("none", "local", "docker"):
        try:
            if name == "docker":
                import docker

                from sandbox.docker_provider import DEFAULT_IMAGE, ensure_image

                docker.from_env(timeout=10).ping()
                ensure_image(DEFAULT_IMAGE)
            provider = get_provider(name)
            provider.check()
            providers[name] = provider
        except Exception as e:  # a provider this machine lacks is reported, not fatal
            print(f"skipping {name}: {e}")
    return providers


def attempt_seconds(provider: SandboxProvider, command: list[str], root: Path, i: int) -> float:
    start = time.perf_counter()
    box = provider.open(root / f"attempt-{i}")
    result = box.exec(command, limits=Limits(wall_s=60))
    box.close()
    elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise SandboxUnavailable(f"no-op failed: {result}")
    return elapsed


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_s": statistics.median(ordered),
        "p90_s": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "mean_s": statistics.fmean(ordered),
        "n": len(ordered),
    }


def main() -> int:
    report: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="silva-bench-") as tmp:
        for name, provider in available().items():
            entry: dict[str, Any] = {"target_s": TARGETS_S[name]}
            for label, command in NOOPS.items():
                attempt_seconds(provider, command, Path(tmp) / name / f"warm-{label}", 0)  # page cache, image
                runs = [
                    attempt_seconds(provider, command, Path(tmp) / name / label, i) for i in range(REPS[name])
                ]
                entry[label] = stats(runs)
            target = TARGETS_S[name]
            entry["meets_target"] = None if target is None else entry["true"]["median_s"] <= target
            report[name] = entry
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'provider':8s} {'no-op':7s} {'median':>9s} {'p90':>9s} {'mean':>9s} {'target':>8s}")
    for name, entry in report.items():
        for label in NOOPS:
            s = entry[label]
            target = entry["target_s"]
            print(
                f"{name:8s} {label:7s} {s['median_s'] * 1e3:7.1f}ms {s['p90_s'] * 1e3:7.1f}ms "
                f"{s['mean_s'] * 1e3:7.1f}ms {'-' if target is None else f'{target * 1e3:.0f}ms':>8s}"
            )
    missed = [n for n, e in report.items() if e["meets_target"] is False]
    if missed:
        print(f"over target: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
