"""Metric parser, run in the sandbox after an experiment (stdlib only; Silva's own code).

Reads the experiment's results.json (untrusted: any size, any shape) and writes
silva_metrics.json in the file contract's shape with only finite numbers, bounded strings and
at most a few hundred entries, or {"error": "..."} saying what is wrong. The host validates
that small file again; it never parses the experiment's printed output.
"""

import json
import math
import sys

MAX_BYTES = 2_000_000
MAX_ITEMS = 200


def parse(raw):
    data = json.loads(raw)
    if not isinstance(data, dict):
        return {"error": "results.json is not a JSON object"}
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        return {"error": "results.json has no `metrics` object"}
    clean = {}
    for name, value in list(metrics.items())[:MAX_ITEMS]:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return {"error": f"metric {str(name)[:80]!r} is not a number: {str(value)[:80]!r}"}
        if not math.isfinite(value):
            return {"error": f"metric {str(name)[:80]!r} is not finite ({value!r})"}
        clean[str(name)[:80]] = float(value)
    artifacts = data.get("artifacts", [])
    if not isinstance(artifacts, list):
        artifacts = []
    return {
        "metrics": clean,
        "artifacts": [str(a)[:200] for a in artifacts if isinstance(a, str)][:MAX_ITEMS],
        "notes": str(data.get("notes", ""))[:2000],
    }


def main():
    try:
        with open("results.json", "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        out = {"error": "no results.json written"}
    else:
        if len(raw) > MAX_BYTES:
            out = {"error": f"results.json is larger than {MAX_BYTES} bytes"}
        else:
            try:
                out = parse(raw)
            except ValueError as e:
                out = {"error": f"results.json is not valid JSON: {e}"}
    with open("silva_metrics.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    sys.exit(main())
