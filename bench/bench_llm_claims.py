"""What the claims check's model layer (review.llm_claims) adds per paper: LLM calls, tokens and
dollars at a hosted price, and wall time, through the real path (`run_checks` with a gateway).

The model is scripted: for each part of the paper it answers with one record per comparison
sentence the deterministic reader finds in that part (at most the schema's 12), the answer a
faithful extractor gives; its tokens are counted at 4 characters each. Price: $3 input, $15
output per million tokens (a hosted mid-size model). Papers: Silva's offline report of a small
run, and the same report with its body repeated to the reviewer's 60,000-character cut (a long
paper). Models: a 128,000-token context (hosted) and an 8,192-token one (a small local model),
which read the paper in more parts. Writes bench/results/llm_claims.json.

    python bench/bench_llm_claims.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.claimnumbers import literals  # noqa: E402
from engine.claims import load_ledger  # noqa: E402
from engine.claimtext import check_text, sentences  # noqa: E402
from engine.llm import LLMConfig, build_gateway  # noqa: E402
from engine.llm.providers.base import ProviderCall  # noqa: E402
from engine.llm.providers.scripted import ScriptedProvider  # noqa: E402
from review import ReviewConfig  # noqa: E402
from review.integrity import run_checks  # noqa: E402
from review.paper import resolve  # noqa: E402
from tests.writeup.support import make_run  # noqa: E402
from writeup.config import WriteupConfig  # noqa: E402
from writeup.offline import report  # noqa: E402
from writeup.paper import open_paper  # noqa: E402

PRICE = {"input": 3.0, "output": 15.0}
CONTEXTS = (128_000, 8_192)
LONG_CHARS = 60_000
CFG = ReviewConfig(page_limit=None, llm_claims=True)


def papers(root: Path) -> dict[str, Path]:
    paper = open_paper(make_run(root), None, WriteupConfig(), sandbox="none")
    (paper.dir / "results.tex").write_text(paper.macros.tex())
    tex = report(paper.run, paper.idea, paper.macros, [], "workshop")
    (paper.dir / "paper.tex").write_text(tex)
    (paper.dir / "references.bib").write_text("")
    long_dir = paper.dir.parent / "long"
    long_dir.mkdir()
    for name in ("results.tex", "references.bib", "ledger.json"):
        (long_dir / name).write_text((paper.dir / name).read_text())
    start, end = tex.index("\\section{Results}"), tex.index("\\section{Limitations}")
    body = tex[start:end]
    repeats = max(1, (LONG_CHARS - len(tex)) // len(body))
    (long_dir / "paper.tex").write_text(tex[:end] + body * repeats + tex[end:])
    return {"offline report": paper.dir, "long paper": long_dir}


def faithful(ledger_dir: Path) -> object:
    ledger = load_ledger(ledger_dir)
    assert ledger is not None

    def answer(call: ProviderCall) -> str:
        part = call.messages[-1].text
        found = [c.sentence for c in check_text(part, ledger) if c.claim is not None]
        records = [
            {
                "quote": s[:300],
                "first": "sparse random features",
                "second": "the baseline",
                "metric": "accuracy",
                "direction": "better",
                "significance": "significant",
                "numbers": [x.text for x in literals(s)][:6],
            }
            for s in found
            if s in " ".join(sentences(part))
        ]
        return json.dumps({"statements": records[:12]})

    return answer


def measure(paper_dir: Path, context: int, out: Path) -> dict[str, object]:
    provider = ScriptedProvider("offline", fn=faithful(paper_dir))  # type: ignore[arg-type]
    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "m": {
                    "provider": "offline",
                    "model": "m",
                    "price": PRICE,
                    "capabilities": {"context_tokens": context, "max_output_tokens": 4096},
                }
            },
            "roles": {"review": {"model": "m", "max_tokens": 4096}},
        }
    )
    gw = build_gateway(cfg, out, None, {}, providers={"offline": provider})
    (paper,) = resolve(paper_dir)
    started = time.perf_counter()
    try:
        check = run_checks(paper, CFG, gw.client()).check("unsupported_claims")
    finally:
        gw.close()
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (out / "llm_ledger.jsonl").read_text().splitlines()]
    return {
        "paper_chars": len(paper.source or ""),
        "context_tokens": context,
        "calls": len(provider.calls),
        "input_tokens": sum(r.get("input_tokens", 0) for r in rows),
        "output_tokens": sum(r.get("output_tokens", 0) for r in rows),
        "dollars": round(sum(r.get("dollars", 0.0) for r in rows), 5),
        "check_wall_s": round(wall, 2),
        "model_findings": sum(f.message.startswith("model layer:") for f in check.findings),
        "detail": check.detail,
    }


def main() -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, paper_dir in papers(Path(tmp)).items():
            for context in CONTEXTS:
                row = {"paper": name, **measure(paper_dir, context, Path(tmp) / f"llm-{name}-{context}")}
                results.append(row)
                print(
                    f"{name:15s} {row['paper_chars']:>6} chars, {context:>6}-token context: "
                    f"{row['calls']} call(s), {row['input_tokens']} in / {row['output_tokens']} out tokens, "
                    f"${row['dollars']}, check {row['check_wall_s']} s, "
                    f"model findings {row['model_findings']}"
                )
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    out = ROOT / "bench" / "results" / "llm_claims.json"
    out.write_text(json.dumps({"price_per_mtok": PRICE, "load_avg_1m": load, "results": results}, indent=2))
    print(f"load {load}; wrote {out}")


if __name__ == "__main__":
    main()
