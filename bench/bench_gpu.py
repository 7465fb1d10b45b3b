"""GPU paths on a real accelerator: do experiments get their GPU, share it by fractions, and hold
it only while they run? Writes bench/results/gpu.json. Without a CUDA device it says so and
writes nothing (`make bench` on a machine without a GPU); `--cpu` runs the same checks with a
numpy experiment and no GPU, to try the script where there is none.

Each check is a real Silva run on a private local Ray cluster, which finds the machine's GPUs
itself; the node kind asks for `num_gpus: 0.25` and `max_in_flight` is left unset, so the slots
come from the cluster (1 GPU / 0.25 = 4). The experiment trains a small PyTorch MLP on CUDA and
prints what it saw (device name, CUDA_VISIBLE_DEVICES, devices visible).
1. Template search (no LLM), for each sandbox that works here (`none`; `local` where bubblewrap
   runs): every good node ran on the GPU it was given; how many experiments shared the GPU at
   once, from the journal's run spans and from nvidia-smi's process list sampled during the run.
2. The LLM search grown from the same template (a template-based idea; a fake OpenAI-compatible
   server on 127.0.0.1 answers as the scripted scientist after lognormal latency): think and
   judge steps hold no GPU, and none of a node's LLM calls falls inside the span its GPU was held.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import yaml  # noqa: E402
from bench_pipeline import fake_llm, llm_config  # noqa: E402

from engine.events import AttemptFinished, AttemptStarted, ClusterJoined, SlotsChanged, StepFinished  # noqa: E402
from engine.journal import Journal  # noqa: E402
from engine.llm.ledger import LEDGER_FILE, read_records  # noqa: E402
from silva import lifecycle  # noqa: E402
from silva.config import load_config  # noqa: E402
from tests.llm.fake_servers import FakeLLMServer  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "gpu.json"
GPU_SHARE = 0.25

TORCH_EXPERIMENT = '''"""A small MLP on a synthetic classification task, trained on the GPU it was given."""
import json
import os
import time

import torch

spec = json.load(open("silva_params.json"))
p, seed = spec["params"], spec["seed"] or 0
visible = os.environ.get("CUDA_VISIBLE_DEVICES")
if not torch.cuda.is_available():
    raise SystemExit(f"no CUDA device visible (CUDA_VISIBLE_DEVICES={visible!r})")
dev = torch.device("cuda")
g = torch.Generator().manual_seed(1234)
X = torch.randn(16384, 64, generator=g)
w = torch.randn(64, generator=g)
y = ((X @ w + 2.0 * torch.sin(3 * X[:, 0])) > 0).long()
X, y = X.to(dev), y.to(dev)
torch.manual_seed(seed)
layers = [torch.nn.Linear(64, int(p["width"])), torch.nn.ReLU()]
if p["deep"] and not p["ablate_hidden"]:
    layers += [torch.nn.Linear(int(p["width"]), int(p["width"])), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(int(p["width"]), 2)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=p["lr"])
start = time.perf_counter()
for _ in range(int(p["steps"])):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(X[:12288]), y[:12288])
    loss.backward()
    opt.step()
torch.cuda.synchronize()
train_time = time.perf_counter() - start
with torch.no_grad():
    val = (model(X[12288:]).argmax(1) == y[12288:]).float().mean().item()
seen = {"device": torch.cuda.get_device_name(0), "visible": visible, "count": torch.cuda.device_count(),
        "peak_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1)}
print("SILVA_GPU " + json.dumps(seen))
json.dump({"metrics": {"val_accuracy": val, "train_time_s": train_time}}, open("results.json", "w"))
'''

# The same contract without a GPU, for --cpu.
NUMPY_EXPERIMENT = """import json, os, time
import numpy as np
spec = json.load(open("silva_params.json"))
p, seed = spec["params"], spec["seed"] or 0
time.sleep(0.3)
val = 0.9 - abs(p["lr"] - 0.01) + (0.02 if p["deep"] and not p["ablate_hidden"] else 0.0) + 0.001 * seed
info = {"device": "cpu", "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "count": 0}
print("SILVA_GPU " + json.dumps(info))
json.dump({"metrics": {"val_accuracy": val, "train_time_s": 0.3}}, open("results.json", "w"))
"""

TEMPLATE: dict[str, Any] = {
    "name": "mlp-gpu",
    "description": "a small MLP on a synthetic task, trained with PyTorch on CUDA",
    "command": ["{python}", "experiment.py"],
    "files": ["experiment.py"],
    "metrics": [
        {"name": "val_accuracy", "direction": "maximize", "primary": True},
        {"name": "train_time_s", "direction": "minimize"},
    ],
    "hyperparameters": {
        "lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True, "default": 0.01},
        "width": {"type": "int", "low": 32, "high": 1024, "default": 256},
    },
    "fixed": {"steps": 300},
    "method": {"name": "second hidden layer", "param": "deep"},
    "ablations": [
        {"name": "no_hidden", "param": "ablate_hidden", "description": "drop the second hidden layer"}
    ],
}
IDEA: dict[str, Any] = {
    "name": "mlp_depth",
    "title": "Does a second hidden layer help a small MLP on a synthetic nonlinear task?",
    "hypothesis": "A second hidden layer raises validation accuracy over one hidden layer.",
    "experiments": ["the template as written; tune lr and width", "a second hidden layer", "ablate it"],
    "risks": ["the task may be easy enough for one layer"],
    "metrics": [{"name": "val_accuracy", "direction": "maximize", "primary": True}],
}
STAGES = {
    "preliminary": {"max_nodes": 2},
    "hyperparameter": {"max_nodes": 6},
    "agenda": {"max_nodes": 3},
    "ablation": {"max_nodes": 2},
}


def gpu_name() -> str | None:
    """The first GPU nvidia-smi lists, or None where there is none."""
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


class GpuSampler:
    """nvidia-smi's compute processes and memory every `period_s`, while a run goes on."""

    def __init__(self, period_s: float = 0.25) -> None:
        self.period_s = period_s
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> GpuSampler:
        if shutil.which("nvidia-smi"):
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            apps = (
                subprocess.run(
                    ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()
            )
            util = (
                subprocess.run(
                    [
                        "nvidia-smi",
                        "--query-gpu=utilization.gpu,memory.used",
                        "--format=csv,noheader,nounits",
                    ],
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .split(",")
            )
            self.samples.append(
                {
                    "processes": len(apps),
                    "util": float(util[0]) if util[0].strip() else 0.0,
                    "memory_mb": float(util[1]) if len(util) > 1 else 0.0,
                }
            )

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        busy = [s for s in self.samples if s["processes"]]
        return {
            "samples": len(self.samples),
            "max_processes": max(s["processes"] for s in self.samples),
            "share_with_processes": round(len(busy) / len(self.samples), 3),
            "max_memory_mb": max(s["memory_mb"] for s in self.samples),
            "mean_util_while_busy": round(sum(s["util"] for s in busy) / len(busy), 1) if busy else 0.0,
        }


def run_spans(j: Journal) -> dict[tuple[str, int], tuple[float, float]]:
    """(node, attempt) -> when it held its node kind's resources: a pipelined node's run step, or a
    whole single-job attempt (template nodes, replicates); not the CPU pool's jobs (aggregations,
    papers), which run beside the slots."""
    start: dict[tuple[str, int], float] = {}
    spans: dict[tuple[str, int], tuple[float, float]] = {}
    for e in j.log.read(AttemptStarted, StepFinished, AttemptFinished):
        if not isinstance(e, (AttemptStarted, StepFinished, AttemptFinished)):
            continue
        key = (e.node_id, e.attempt)
        if isinstance(e, AttemptStarted):
            if e.holds and e.step in ("", "run", "all") and j.nodes[e.node_id].kind != "selection":
                start[key] = e.ts
        elif key in start and (isinstance(e, AttemptFinished) or e.step == "run"):
            spans[key] = (start.pop(key), e.ts)
    return spans


def most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = peak = 0
    for _, d in edges:
        now += d
        peak = max(peak, now)
    return peak


def check_run(run_dir: Path, makespan: float, sampler: GpuSampler) -> dict[str, Any]:
    j = Journal.open(run_dir, read_only=True)
    seen = []
    for n in j:
        line = next(
            (
                ln
                for ln in (n.execution.stdout_tail if n.execution else "").splitlines()
                if ln.startswith("SILVA_GPU ")
            ),
            None,
        )
        if line:
            seen.append(json.loads(line[len("SILVA_GPU ") :]))
    spans = run_spans(j)
    statuses = Counter(n.status.value for n in j)
    slots = [e.slots for e in j.log.read(SlotsChanged)]
    cluster = next(iter(j.log.read(ClusterJoined)), None)
    row: dict[str, Any] = {
        "makespan_s": round(makespan, 1),
        "nodes": len(j.nodes),
        "statuses": dict(statuses),
        "cluster_gpus": cluster.gpus if cluster else None,
        "cluster_cpus": cluster.cpus if cluster else None,
        "slots_from_cluster": slots,
        "experiments_reporting": len(seen),
        "devices_seen": sorted({s["device"] for s in seen}),
        "cuda_visible_devices_seen": sorted({str(s["visible"]) for s in seen}),
        "devices_visible_per_experiment": sorted({s["count"] for s in seen}),
        "max_peak_mb": max((s.get("peak_mb", 0.0) for s in seen), default=0.0),
        "runs_at_once_max": most_at_once(list(spans.values())),
        "nvidia_smi": sampler.summary(),
    }
    ledger = run_dir / LEDGER_FILE
    if ledger.is_file():
        by_node: dict[str, list[tuple[float, float]]] = {}
        for (node, _), span in spans.items():
            by_node.setdefault(node, []).append(span)
        calls = [r for r in read_records(ledger) if r.node_id in by_node]
        inside = [
            r
            for r in calls
            for s, e in by_node[r.node_id or ""]  # a call overlapping its own node's GPU span
            if r.ts - r.latency_s < e and r.ts > s
        ]
        row.update(
            llm_calls_of_run_nodes=len(calls),
            llm_calls_while_own_gpu_held=len(inside),
            steps=sorted({e.step for e in j.log.read(AttemptStarted)}),
        )
    return row


def write_template(root: Path, cpu: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "experiment.py").write_text(NUMPY_EXPERIMENT if cpu else TORCH_EXPERIMENT)
    (root / "template.yaml").write_text(yaml.safe_dump(TEMPLATE))
    return root


def one_run(tmp: Path, sandbox: str, cpu: bool, llm_url: str | None) -> dict[str, Any]:
    tpl = write_template(tmp / "tpl", cpu)
    cfg: dict[str, Any] = {
        "name": "gpu",
        "template": str(tpl),
        "output_dir": str(tmp / "runs"),
        "seed": 0,
        "replicates": 2,
        "stages": STAGES,
        "budgets": {"wall_clock_s": 600, "node_timeout_s": 120},
        "executor": {"kind": "ray"},  # max_in_flight unset: slots from the cluster's GPUs
        # Without a GPU, CPUs bound the slots instead: a quarter of them each, as a GPU share would.
        "resources": {
            "default": {
                "num_cpus": max(1, (os.cpu_count() or 4) // 4) if cpu else 1,
                "num_gpus": 0.0 if cpu else GPU_SHARE,
                "memory_mb": 4096,
            }
        },
        "sandbox": sandbox,
    }
    if llm_url:
        (tmp / "idea.yaml").write_text(yaml.safe_dump(IDEA))
        cfg |= {
            "idea": str(tmp / "idea.yaml"),
            "search": {"num_drafts": 1},
            "llm": llm_config(llm_url, max_concurrency=64),
        }
    (tmp / "run.yaml").write_text(yaml.safe_dump(cfg))
    config = load_config(tmp / "run.yaml")
    run_dir, journal = lifecycle.create_run(config)
    started = time.monotonic()
    with GpuSampler() as sampler:
        outcome = lifecycle.execute(config, journal)
    row = check_run(run_dir, time.monotonic() - started, sampler)
    row.update(
        mode="llm search, template-based idea" if llm_url else "template search",
        sandbox=sandbox,
        outcome=outcome.status,
        message=outcome.message,
    )
    return row


def local_sandbox_works() -> bool:
    from sandbox import SandboxUnavailable, get_provider

    try:
        get_provider("local").check()
    except (SandboxUnavailable, OSError) as e:
        print(f"  local sandbox left out: {e}", flush=True)
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", action="store_true", help="no GPU: a numpy experiment, to try the script")
    ap.add_argument("--llm-median", type=float, default=1.0, help="the fake LLM's median latency, seconds")
    ap.add_argument("--sandboxes", nargs="+", default=["none", "local"])
    args = ap.parse_args()
    name = gpu_name()
    if name is None and not args.cpu:
        print(
            "no CUDA device here (nvidia-smi finds none): the GPU checks need a machine with one; nothing "
            "written"
        )
        return
    sandboxes = [s for s in args.sandboxes if s != "local" or local_sandbox_works()]
    rows = []
    for sandbox in sandboxes:
        for llm in (False, True):
            with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
                fake_llm(server, args.llm_median, seed=7)
                try:
                    row = one_run(Path(tmp), sandbox, args.cpu, server.url if llm else None)
                except Exception as e:  # one broken path must not hide the others' figures
                    row = {"sandbox": sandbox, "llm": llm, "error": f"{type(e).__name__}: {e}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.cpu:
        print("--cpu: results not written")
        return
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "gpu": name,
                "gpu_share": GPU_SHARE,
                "llm_median_s": args.llm_median,
                "measured": time.strftime("%Y-%m-%d"),
                "runs": rows,
            },
            indent=2,
        )
    )
    print(f"results in {RESULTS}")


if __name__ == "__main__":
    main()
