"""The paper writer's cost per paper: wall time and LLM calls with the scripted provider (full LLM
writer: figures, citations from a fake Semantic Scholar on 127.0.0.1, sections, a fix round, one
reflection round), and the offline report; compile time per latexmk run from writeup.jsonl.
Writes bench/results/writeup.json. No target: TeX time dominates and depends on the machine."""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.base import SandboxUnavailable, get_provider
from tests.writeup.fake_s2 import fake_s2
from tests.writeup.support import ScriptedWriter, make_run, scripted_llm
from writeup.config import LiteratureConfig, WriteupConfig
from writeup.literature import open_literature
from writeup.paper import write_paper

RESULTS = Path(__file__).resolve().parent / "results" / "writeup.json"
PAPERS = 2


def compiles(pdf: Path) -> list[float]:
    lines = (pdf.parent / "writeup.jsonl").read_text().splitlines()
    return [e["wall_s"] for e in map(json.loads, lines) if e["step"] == "compile"]


def main() -> None:
    if shutil.which("latexmk") is None:
        sys.exit("TeX Live is missing: run `make system-deps`")
    try:
        get_provider("local").check()
        sandbox = "local"
    except SandboxUnavailable:
        sandbox = "none"
    llm_walls, calls, compile_s, offline_walls = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="silva-bench-writeup-") as tmp, fake_s2() as (url, _):
        for i in range(PAPERS):
            run = make_run(Path(tmp), f"llm{i}")
            writer = ScriptedWriter(bad_latex=True, fake_cite=True, typed_number=True)
            llm, gateway = scripted_llm(run, writer)
            lit = open_literature(LiteratureConfig(base_url=url, requests_per_s=100), {})
            started = time.monotonic()
            pdf = write_paper(
                run, llm=llm, literature=lit, cfg=WriteupConfig(reflection_rounds=1), sandbox=sandbox
            )
            llm_walls.append(time.monotonic() - started)
            gateway.close()
            calls.append(len(writer.calls))
            compile_s += compiles(pdf)
            run = make_run(Path(tmp), f"offline{i}")
            started = time.monotonic()
            pdf = write_paper(run, sandbox=sandbox)
            offline_walls.append(time.monotonic() - started)
            compile_s += compiles(pdf)
    result = {
        "sandbox": sandbox,
        "papers": PAPERS,
        "llm_paper_wall_s_median": round(statistics.median(llm_walls), 2),
        "llm_calls_per_paper": statistics.mean(calls),
        "offline_report_wall_s_median": round(statistics.median(offline_walls), 2),
        "compile_s_median": round(statistics.median(compile_s), 2),
        "compiles": len(compile_s),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    for k, v in result.items():
        print(f"{k:32s} {v}")


if __name__ == "__main__":
    main()
