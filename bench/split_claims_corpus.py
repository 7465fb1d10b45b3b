"""Split one batch of the claims-wording corpus into its tune and held-out halves by the corpus's
split rule (bench_claims_wording.split_key): within each kind and each `fakes` list, entries sorted
by sha256("silva-claims-corpus/<kind>\\n<text>") (references by key); the first half, rounded up,
goes to tune_<batch>.yaml, the rest to heldout_<batch>.yaml.

    python bench/split_claims_corpus.py b --draft all_of_batch_b.yaml   # a new batch
    python bench/split_claims_corpus.py b                                # re-split tune_b + heldout_b
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_claims_wording import CORPUS, HALVES, split_key

HEADER = """\
# Claims-wording corpus, batch {batch}, half "{half}" (bench/bench_claims_wording.py; docs/benchmarks.md).
#
# Batch {batch} was written after the batches before it (batch a: tune.yaml, heldout.yaml) by an
# author of its own who did not read the claim checker's code, Silva's writer templates or any
# held-out half, nor ran the checker on these phrasings: LLM-style sentences (hedges, passive voice,
# parentheticals, semicolons, rankings, relative changes, points, x-fold, equivalence, denials,
# abbreviations, percentages) in wordings of its own. The slot language ({{method}}, {{Loser}},
# {{pct}}, {{abbr}}, the *_wrong values, the fakes) and the `needs` are batch a's: see the header of
# tune.yaml.
#
# Split rule (bench/split_claims_corpus.py): within each kind (and each `fakes` list, as kind
# "fakes.<list>"), the entries are sorted by sha256("silva-claims-corpus/<kind>\\n<text>") (for
# references: the key); the first half, rounded up, is tune_{batch}.yaml, the rest heldout_{batch}.yaml.
# Tune the checker on the tune files only; do not read heldout_{batch}.yaml while working on it.
"""


def halve(kind: str, items: list[Any], key: Any = None) -> tuple[list[Any], list[Any]]:
    """`items` (in their given order) split by the rule: the first half of the hash order is tune."""
    name = key or (lambda x: x if isinstance(x, str) else x["text"])
    order = sorted(items, key=lambda x: split_key(kind, name(x)))
    tune = {id(x) for x in order[: math.ceil(len(order) / 2)]}
    return [x for x in items if id(x) in tune], [x for x in items if id(x) not in tune]


def split(batch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The batch's two halves, as the corpus files hold them (without the header)."""
    out: dict[str, dict[str, Any]] = {h: {"half": h, "kinds": {}, "fakes": {}} for h in HALVES}
    for kind, spec in batch["kinds"].items():
        parts = halve(kind, spec["phrasings"])
        for h, part in zip(HALVES, parts, strict=True):
            out[h]["kinds"][kind] = {"needs": spec.get("needs", []), "phrasings": part}
    for name, entries in batch["fakes"].items():
        by_key = (lambda r: r["key"]) if name == "references" else None
        for h, part in zip(HALVES, halve(f"fakes.{name}", entries, by_key), strict=True):
            out[h]["fakes"][name] = part
    return out


def merged(batch: str, corpus: Path) -> dict[str, Any]:
    """The batch's two existing files as one (tune's entries first)."""
    halves = [yaml.safe_load((corpus / f"{h}_{batch}.yaml").read_text()) for h in HALVES]
    kinds = {
        k: {"needs": spec["needs"], "phrasings": [p for h in halves for p in h["kinds"][k]["phrasings"]]}
        for k, spec in halves[0]["kinds"].items()
    }
    fakes = {name: [x for h in halves for x in h["fakes"][name]] for name in halves[0]["fakes"]}
    return {"kinds": kinds, "fakes": fakes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("batch", help='the batch letter, e.g. "b" (batch "a" is tune.yaml/heldout.yaml)')
    ap.add_argument("--draft", type=Path, help="the whole batch in one file (default: its two halves)")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    if args.batch == "a":
        ap.error("batch a is tune.yaml and heldout.yaml: adding to it would reshuffle its split")
    whole = yaml.safe_load(args.draft.read_text()) if args.draft else merged(args.batch, args.corpus)
    for half, data in split(whole).items():
        body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        path = args.corpus / f"{half}_{args.batch}.yaml"
        path.write_text(HEADER.format(batch=args.batch, half=half) + body)
        counts = {k: len(v["phrasings"]) for k, v in data["kinds"].items()}
        print(path.name, counts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
