"""Auto-Bench and StatefulDiscovery, offline (scripted provider). Writes bench/results/autobench.json.

1. Auto-Bench: chemistry and social oracles, n in {3, 5, 7, 10, 15}, 10 seeded graphs each, the
   ideal, random and scripted agents as engine nodes (`silva bench autobench`); success rate and
   cycles to success by n; the long-trajectory tracking task at lengths 10, 30, 90.
2. StatefulDiscovery on the discovery mode's planted-effect tables (5 seeds) and column-permuted
   null tables (10 seeds), full and with each ablation switch off: supported-claim precision
   against the generator's true links, and the empirical false-discovery rate (target <= 5%).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from search.discovery.benchmarks import null_table, planted_table
from silva.cli import bench as autobench_cli
from tests.stateful.helpers import run as run_stateful

RESULTS = Path(__file__).parent / "results" / "autobench.json"
NS = [3, 5, 7, 10, 15]
# The links planted_table generates (search/discovery/benchmarks.py), as unordered pairs with their sign.
TRUE_LINKS = {
    frozenset(("exercise_hours", "resting_heart_rate")): -1,
    frozenset(("age", "blood_pressure")): 1,
    frozenset(("smoker", "blood_pressure")): 1,
    frozenset(("sleep_hours", "cholesterol")): -1,
    frozenset(("age", "coffee_cups")): 1,
    frozenset(("age", "cholesterol")): 1,
}
ABLATIONS = {
    "full": {},
    "no_structured_hypotheses": {"structured_hypotheses": False},
    "no_local_adjudication": {"local_adjudication": False},
    "no_frontier_control": {"frontier_control": False},
}


def autobench(tmp: Path) -> dict[str, Any]:
    cfg = autobench_cli.load_autobench_config(
        None,
        {
            "envs": ["chemistry", "social"],
            "ns": NS,
            "graphs": 10,
            "agents": ["ideal", "random", "scripted"],
            "tracking_lengths": [10, 30, 90],
            "output_dir": tmp,
        },
    )
    run_dir, journal = autobench_cli.create_run(cfg)
    start = time.monotonic()
    outcome = autobench_cli.execute(cfg, journal, run_dir)
    summary = json.loads((run_dir / autobench_cli.SUMMARY_FILE).read_text())
    return {
        "outcome": outcome.status,
        "wall_s": round(time.monotonic() - start, 1),
        "nodes": len(journal.nodes),
        **summary,
    }


def stateful(tmp: Path) -> dict[str, Any]:
    out: dict[str, object] = {}
    for name, switches in ABLATIONS.items():
        true_sup = false_sup = planted_sup = null_sup = null_runs_with_any = 0
        verdicts: dict[str, int] = {}
        for kind, seeds in (("planted", range(5)), ("null", range(10))):
            for seed in seeds:
                df = planted_table(seed) if kind == "planted" else null_table(planted_table(100 + seed), seed)
                _, strategy = run_stateful(tmp / f"{name}-{kind}-{seed}", df, **switches)
                found = 0
                for inv in strategy.state.investigations.values():
                    verdict = strategy.judge(inv).verdict
                    verdicts[verdict] = verdicts.get(verdict, 0) + 1
                    if verdict != "supported":
                        continue
                    found += 1
                    pair = frozenset(inv.claim.variables[:2])
                    true = kind == "planted" and TRUE_LINKS.get(pair) == inv.claim.expected_sign
                    true_sup += true
                    false_sup += not true
                planted_sup += found if kind == "planted" else 0
                null_sup += found if kind == "null" else 0
                null_runs_with_any += kind == "null" and found > 0
        supported = true_sup + false_sup
        out[name] = {
            "supported": supported,
            "true_supported": true_sup,
            "false_supported": false_sup,
            "precision": round(true_sup / supported, 4) if supported else None,
            "fdr": round(false_sup / supported, 4) if supported else 0.0,
            "recall_of_true_links": round(true_sup / (5 * len(TRUE_LINKS)), 4),
            "supported_on_null_tables": null_sup,
            "null_runs_with_a_supported_claim": f"{null_runs_with_any}/10",
            "verdicts": verdicts,
        }
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ab = autobench(Path(tmp) / "autobench")
        sd = stateful(Path(tmp) / "stateful")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"autobench": ab, "stateful": sd}, indent=1))
    print(f"Auto-Bench ({ab['nodes']} nodes, {ab['wall_s']} s): success rate / mean cycles to success by n")
    for env in ("chemistry", "social"):
        for agent in ("ideal", "random", "scripted"):
            rows = {
                r["n"]: r
                for r in ab["rows"]
                if r["task"] == "episode" and r["env"] == env and r["agent"] == agent
            }
            cells = "  ".join(
                f"n={n}: {rows[n]['success']:.2f}/{rows[n].get('cycles_to_success') or float('nan'):.1f}"
                for n in NS
            )
            print(f"  {env:9s} {agent:8s} {cells}")
    print("StatefulDiscovery (precision of supported claims, FDR, supported on 10 null tables):")
    for name, r in sd.items():
        print(
            f"  {name:26s} precision={r['precision']} fdr={r['fdr']} null={r['supported_on_null_tables']} "
            f"supported={r['supported']}"
        )
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
