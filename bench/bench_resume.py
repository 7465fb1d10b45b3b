"""Resume never pays twice: SIGKILL the driver at random moments, resume, count repaid requests.

An LLM-mode run (the scripted scientist answering through a fake Anthropic server on
127.0.0.1, real SDK and gateway on Silva's side, experiments in the `none` sandbox) is started
as a `silva run` subprocess, killed with SIGKILL at a random moment, then finished with
`silva resume`. Per run we count, from the server's log and the run's LLM ledger:

- repaid: answers the driver had received (a paid ledger line) that were paid for again
  later, i.e. the same request (same cache key) paid twice. Target 0.
- step_repaid: a node's step (node, role) paid before the kill and paid again after it with a
  different request (the prompt changed across the resume). Reported, not targeted.
- lost_in_flight: requests the server answered whose answer never reached the ledger because
  the driver died first; the resumed run must ask them again. A provider bills them, no cache
  can hold them; reported so the number is honest.

Writes bench/results/resume.json.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the fake server and the scripted scientist live with the tests

from tests.llm.fake_servers import FakeLLMServer, Recorded, Reply  # noqa: E402
from tests.search.agentic_helpers import IDEA, context_of, responder  # noqa: E402

RUNS = 10
LLM_DELAY_S = 0.3  # the fake model's answer time: calls are in flight most of the run
ROLES = ("code", "feedback", "vision", "selection")
KEY_ENV = "SILVA_BENCH_FAKE_KEY"


def shim(body: dict[str, Any]) -> SimpleNamespace:
    """The Anthropic request as the scripted scientist's ProviderCall-like view."""
    messages = []
    for m in body["messages"]:
        parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
        images = [
            SimpleNamespace(png=base64.b64decode(p["source"]["data"]))
            for p in parts
            if p.get("type") == "image"
        ]
        messages.append(SimpleNamespace(role=m["role"], text=text, images=images))
    role = body["model"].removeprefix("fake-")
    first = next(m.text for m in messages if m.role == "user")
    return SimpleNamespace(role=role, messages=messages, context=context_of(role, first))


def request_id(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def config(tmp: Path, url: str) -> Path:
    idea = tmp / "idea.yaml"
    idea.write_text(yaml.safe_dump(IDEA))
    llm = {
        "providers": {
            "fake": {
                "kind": "anthropic",
                "base_url": url,
                "api_key_env": KEY_ENV,
                "max_retries": 2,
                "backoff_base_s": 0.05,
                "timeout_s": 30,
            }
        },
        "models": {
            f"m-{r}": {
                "provider": "fake",
                "model": f"fake-{r}",
                "price": {"input": 3, "output": 15},
                "capabilities": {"vision": True, "tools": True},
            }
            for r in ROLES
        },
        "roles": {r: {"model": f"m-{r}", "max_tokens": 4096} for r in ROLES},
        "probe": False,  # the start-of-run probe's calls would count as calls lost in flight
    }
    cfg = {
        "name": "resume",
        "idea": str(idea),
        "output_dir": str(tmp / "runs"),
        "replicates": 1,
        "stages": {
            "preliminary": {"max_nodes": 3},
            "hyperparameter": {"max_nodes": 2},
            "agenda": {"max_nodes": 2},
            "ablation": {"max_nodes": 1},
        },
        "search": {"num_drafts": 2, "debug_prob": 0.5},
        "budgets": {"wall_clock_s": 600, "node_timeout_s": 60},
        "executor": {"kind": "inprocess", "max_in_flight": 3},
        "sandbox": "none",
        "llm": llm,
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def silva(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, KEY_ENV: "sk-fake-bench", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "silva.cli.main", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(proc: subprocess.Popen[bytes], what: str) -> None:
    _, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}): {err.decode()[-2000:]}")


def paid(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "llm_ledger.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return [r for r in records if not r["cache_hit"] and r["error"] is None]


def one_run(tmp: Path, server: FakeLLMServer, kill_after: float | None) -> dict[str, Any]:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cfg = config(tmp, server.url)
    seen_before = len(server.requests)
    started = time.monotonic()
    proc = silva("run", str(cfg))
    killed_at = None
    if kill_after is None:
        finish(proc, "silva run")
    else:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed_at = time.time()
    duration = time.monotonic() - started
    run_dir = next((tmp / "runs").iterdir())
    if killed_at is not None:
        finish(silva("resume", str(run_dir)), "silva resume")
    records = paid(run_dir)
    requests = server.requests[seen_before:]
    keys = Counter(r["key"] for r in records)
    steps_before = {(r["node_id"], r["role"], r["key"]) for r in records if killed_at and r["ts"] < killed_at}
    after = [r for r in records if killed_at and r["ts"] >= killed_at]
    step_repaid = sum(
        1
        for r in after
        if any(n == r["node_id"] and role == r["role"] and k != r["key"] for n, role, k in steps_before)
    )
    return {
        "killed_after_s": round(kill_after, 2) if killed_at and kill_after is not None else None,
        "duration_s": round(duration, 1),
        "server_requests": len(requests),
        "paid_answers": len(records),
        "repaid": sum(c - 1 for c in keys.values()),
        "step_repaid": step_repaid,
        "lost_in_flight": len(requests) - len(records),
        "duplicate_request_bodies": sum(
            c - 1 for c in Counter(request_id(r.body) for r in requests).values()
        ),
    }


def main() -> int:
    scientist = responder()

    def answer(rec: Recorded) -> Reply:
        data = json.loads(scientist(shim(rec.body)))
        return Reply("json", data=data, delay_s=LLM_DELAY_S, usage=(2000, 500, 0))

    work = ROOT / "bench" / "resume.tmp"
    rng = random.Random(13)
    with FakeLLMServer() as server:
        server.handler = answer
        reference = one_run(work / "reference", server, None)  # how long an uninterrupted run takes
        runs = [
            one_run(work / f"run{i}", server, rng.uniform(0.1, 0.9) * reference["duration_s"])
            for i in range(RUNS)
        ]
    shutil.rmtree(work, ignore_errors=True)
    killed = [r for r in runs if r["killed_after_s"] is not None]
    result = {
        "runs": RUNS,
        "killed": len(killed),
        "reference": reference,
        "repaid_total": sum(r["repaid"] for r in runs),
        "step_repaid_total": sum(r["step_repaid"] for r in runs),
        "lost_in_flight_total": sum(r["lost_in_flight"] for r in runs),
        "target": {"repaid_total": 0},
        "per_run": runs,
    }
    out = ROOT / "bench" / "results" / "resume.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "per_run"}, indent=2))
    return 0 if result["repaid_total"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
