"""A finished run built from events (two stages, seeds aggregated), a scripted writer standing in
for the LLM, and a gateway around it; shared by the writeup tests and bench/bench_writeup.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from engine import events as ev
from engine.journal import Journal
from engine.llm import LLM, LLMConfig, build_gateway
from engine.llm.gateway import Gateway
from engine.llm.providers.scripted import ScriptedProvider, last_user_text
from engine.node import AttemptResult, MetricSpec, MetricValue, Node

METRICS = [
    MetricSpec(name="accuracy", direction="maximize", primary=True),
    MetricSpec(name="fit_time_s", direction="minimize"),
]
SEEDS = {
    "method (best of tuning)": {"accuracy": [0.912, 0.925, 0.931], "fit_time_s": [1.21, 1.18, 1.25]},
    "baseline (best of warmup)": {"accuracy": [0.861, 0.848, 0.857], "fit_time_s": [0.41, 0.44, 0.39]},
}


def make_run(root: Path, name: str = "toy") -> Path:
    """A run directory as a finished template search leaves it (no experiment is run)."""
    run_dir = root / name
    template = root / f"{name}-template"
    template.mkdir(parents=True)
    (template / "template.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "toy-sparse-features",
                "description": "Hypothesis: sparse random features make a linear classifier more accurate on "
                "toy data.",
                "method": {
                    "name": "sparse random features",
                    "param": "use_srf",
                    "description": "a sparse projection before the classifier",
                },
                "metrics": [m.model_dump() for m in METRICS],
                "fixed": {"max_iter": 200},
            }
        )
    )
    run_dir.mkdir(parents=True)
    j = Journal.open(run_dir)
    cfg = {
        "name": name,
        "template": str(template),
        "seed": 0,
        "replicates": 3,
        "stages": {"warmup": {}, "tuning": {}},
    }
    j.record(
        ev.RunStarted(config=cfg, metrics=[m.model_dump() for m in METRICS], stages=["warmup", "tuning"])
    )
    j.record(ev.SessionStarted(resumed=False))
    groups = list(SEEDS)
    for stage, subject, kind in (("warmup", groups[1], "baseline"), ("tuning", groups[0], "method")):
        j.record(ev.StageStarted(idea="default", stage=stage))
        best = j.add_node(
            Node(stage=stage, kind=kind, params={"C": 0.5, "use_srf": kind == "method"}, plan=f"{kind} run")
        )
        _finish(j, best.id, {m: sum(v) / 3 for m, v in SEEDS[subject].items()})
        buggy = j.add_node(Node(stage=stage, kind="draft", plan="a broken try"))
        j.attempt_finished(buggy.id, 1, AttemptResult(status="buggy", reason="NameError"))
        j.record(
            ev.StageBest(
                idea="default",
                stage=stage,
                node_id=best.id,
                value=sum(SEEDS[subject]["accuracy"]) / 3,
                reason="highest accuracy",
            )
        )
        agg = j.add_node(Node(stage=stage, kind="aggregation"))
        chosen = {g: SEEDS[g] for g in ([subject] if stage == "warmup" else groups)}
        _aggregate(run_dir, j, agg.id, f"default · {stage}", chosen)
        j.record(
            ev.StageEnded(
                idea="default",
                stage=stage,
                best_node_id=best.id,
                aggregate_node_id=agg.id,
                reason="node budget of 2 used",
            )
        )
    j.record(ev.RunFinished(reason="all stages done"))
    return run_dir


def _finish(j: Journal, node_id: str, metrics: dict[str, float]) -> None:
    j.attempt_finished(
        node_id,
        1,
        AttemptResult(
            status="good",
            metrics=[
                MetricValue(name=k, value=v, direction="maximize" if k == "accuracy" else "minimize")
                for k, v in metrics.items()
            ],
        ),
    )


def _aggregate(
    run_dir: Path, j: Journal, node_id: str, title: str, groups: dict[str, dict[str, list[float]]]
) -> None:
    import statistics

    ws = run_dir / "nodes" / node_id / "attempt-1"
    ws.mkdir(parents=True)
    table = {
        g: {m: {"mean": statistics.fmean(v), "std": statistics.stdev(v), "n": len(v)} for m, v in per.items()}
        for g, per in groups.items()
    }
    (ws / "aggregate.json").write_text(json.dumps({"title": title, "groups": table, "values": groups}))
    rel = ws.relative_to(run_dir)
    j.attempt_finished(
        node_id,
        1,
        AttemptResult(
            status="good",
            artifacts=[str(rel / "aggregate.json")],
            metrics=[
                MetricValue(
                    name="accuracy", value=table[next(iter(groups))]["accuracy"]["mean"], direction="maximize"
                )
            ],
        ),
    )


FENCE = re.compile(r"```latex\n(.*?)\n```", re.DOTALL)
FIGURE_SCRIPT = """```python
import json, os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
data = json.load(open("figure_data.json"))
os.makedirs("figures", exist_ok=True)
stage = [s for s in data["stages"] if s["stage"] == data["main_stage"]][0]
fig, ax = plt.subplots(figsize=(4, 3))
labels = list(stage["groups"])
ax.bar(range(len(labels)), [stage["groups"][g][data["primary"]]["mean"] for g in labels],
       yerr=[stage["groups"][g][data["primary"]]["std"] for g in labels], capsize=4)
ax.set_xticks(range(len(labels)), labels, fontsize=6)
ax.set_ylabel(data["primary"])
fig.tight_layout()
fig.savefig("figures/comparison.png", dpi=150)
```"""


# The same bar chart drawn without matplotlib (a raw PNG: one bar per group, heights from the
# data), for tests where the figure is only carried through the paper: it saves a matplotlib
# import per paper.
PNG_FIGURE_SCRIPT = """```python
import json, os, struct, zlib
data = json.load(open("figure_data.json"))
stage = [s for s in data["stages"] if s["stage"] == data["main_stage"]][0]
means = [g[data["primary"]]["mean"] for g in stage["groups"].values()]
top = max(max(means), 1e-9)
w, h = 40 * len(means), 120
heights = [int(h * m / top) for m in means]
bar, blank = (40, 90, 200), (255, 255, 255)
rows = b"".join(
    b"\\x00" + bytes(v for x in range(w) for v in (bar if h - y <= heights[x // 40] else blank))
    for y in range(h)
)
def chunk(kind, body):
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)
os.makedirs("figures", exist_ok=True)
with open("figures/comparison.png", "wb") as fh:
    fh.write(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
             + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
```"""


class ScriptedWriter:
    """Answers every writeup request by its context's step, like a diligent writer. Faults are opt-in:
    `bad_latex` (the Results draft uses an undefined command until the fix step), `fake_cite`
    (cites a key no search returned), `typed_number` (types a number no artifact produced;
    `fixes_numbers` says whether a reflection round removes it), `false_claim` (says the method is
    significantly worse on accuracy, where it is significantly better; no round fixes it)."""

    def __init__(
        self,
        bad_latex: bool = False,
        fake_cite: bool = False,
        typed_number: bool = False,
        fixes_numbers: bool = True,
        false_claim: bool = False,
        bad_captions: bool = False,
        figure_script: str = FIGURE_SCRIPT,
    ) -> None:
        self.bad_latex, self.fake_cite, self.typed_number = bad_latex, fake_cite, typed_number
        self.fixes_numbers = fixes_numbers
        self.false_claim = false_claim
        self.bad_captions = bad_captions  # the captions answer never validates
        self.figure_script = figure_script
        self.calls: list[str] = []

    def __call__(self, call) -> str:  # a ProviderCall
        prompt = last_user_text(call.messages)
        header = dict(call.context)
        step = header["step"]
        self.calls.append(step)
        if step == "figures":
            return self.figure_script
        if step == "queries":
            return json.dumps(
                {"queries": [] if header.get("round") != "1" else ["sparse random projections"]}
            )
        if step == "picks":
            ids = re.findall(r"^\[(s2:[^\]]+)\]", prompt, re.MULTILINE)
            return json.dumps(
                {"picks": [{"paper_id": i, "justification": "the projection we build on"} for i in ids[:2]]}
            )
        if step == "captions" and self.bad_captions:
            return '{"captions": [{"figure": "comparison.png", "caption": "cut mid'
        if step == "captions":
            names = prompt.rsplit(": ", 1)[1].split(", ")
            return json.dumps(
                {
                    "captions": [
                        {
                            "figure": n,
                            "caption": "Accuracy of the method and the baseline; whiskers: one sd.",
                        }
                        for n in names
                    ]
                }
            )
        if step == "title":
            return json.dumps({"title": "Sparse Random Features for Linear Classifiers"})
        if step == "section":
            return "```latex\n" + self.section(header["name"], prompt) + "\n```"
        if step in ("fix", "revise"):
            tex = FENCE.search(prompt)
            body = (
                tex.group(1)
                if tex
                else re.sub(
                    r"^\s*\d+\| ",
                    "",
                    prompt.split("line numbers:\n", 1)[1].rsplit("\n\nAnswer", 1)[0],
                    flags=re.MULTILINE,
                )
            )
            body = body.replace("\\silvaundefinedcommand{}", "")
            if step == "revise" and self.fixes_numbers:
                body = body.replace(" Prior work reported 0.987 on this task.", "")
            return "```latex\n" + body + "\n```"
        if step == "review_figure":
            return json.dumps({"acceptable": True, "feedback": "bars and whiskers are legible"})
        if step == "review_pages":
            return json.dumps({"issues": []})
        return json.dumps({"error": f"unexpected step {step}"})

    def section(self, name: str, prompt: str) -> str:
        keys = re.findall(r"^(\w+): \[", prompt.split("Citable keys:\n", 1)[1], re.MULTILINE)
        cite = f" \\cite{{{','.join(keys)}}}" if keys else ""
        if name == "Abstract":
            return (
                "We test whether sparse random features help a linear classifier. The method reaches "
                "\\MainMethodMean{} accuracy against \\MainBaselineMean{} for the baseline (Welch "
                "$p=\\MainP{}$, $g=\\MainG{}$)."
            )
        if name == "Results":
            text = (
                "Figure~\\ref{fig:comparison} compares the groups. The method reaches "
                "\\MainMethodMean{}\\,$\\pm$\\,\\MainMethodSd{} over \\MainN{} seeds against "
                "\\MainBaselineMean{}\\,$\\pm$\\,\\MainBaselineSd{}. "
            ) + headline_sentence(prompt)
            if self.typed_number:
                text += " Prior work reported 0.987 on this task."
            if self.false_claim:
                text += (
                    " The method was significantly worse than the baseline on accuracy."
                    "\\claim{tuning-AvsB-accuracy}"
                )
            if self.bad_latex:
                text += " \\silvaundefinedcommand{}"
            return text
        if name == "Related_Work":
            fake = " \\cite{madeup2024phantom}" if self.fake_cite else ""
            return f"Random projections have a long history{cite}. Others studied sparse variants{fake}."
        return (
            f"This section ({name.replace('_', ' ').lower()}) describes the work in "
            f"words.{cite if name == 'Introduction' else ''}"
        )


_HEADLINE = re.compile(
    r"^- (\S+) \[HEADLINE: the hypothesis\]: .*? on (\S+) \(\w+ metric\): ([a-z ]+) at alpha", re.MULTILINE
)


def headline_sentence(prompt: str) -> str:
    """The ledger's headline verdict in words, as the prompt lists it, marked with its claim id."""
    m = _HEADLINE.search(prompt)
    if m is None or m.group(3) == "untested":
        return ""
    claim_id, metric, verdict = m.group(1), m.group(2).replace("_", "\\_"), m.group(3)
    core = (
        "the method and the baseline showed no detectable difference"
        if verdict == "no detectable difference"
        else f"the method was significantly {verdict} than the baseline"
    )
    return (
        f"On {metric}, {core} (difference \\MainDiff{{}}, \\CiLevel\\% CI [\\MainDiffLo{{}}, "
        f"\\MainDiffHi{{}}]).\\claim{{{claim_id}}}"
    )


def scripted_llm(
    run_dir: Path,
    writer: ScriptedWriter,
    price: float = 0.0,
    context_tokens: int = 128_000,
    max_tokens: int = 16384,
) -> tuple[LLM, Gateway]:
    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "w": {
                    "provider": "offline",
                    "model": "scripted-writer",
                    "price": {"input": price, "output": price},
                    "capabilities": {
                        "vision": True,
                        "max_output_tokens": 16384,
                        "context_tokens": context_tokens,
                    },
                }
            },
            "roles": {
                "writeup": {"model": "w", "max_tokens": max_tokens},
                "vision": {"model": "w", "max_tokens": 1024},
            },
        }
    )
    gateway = build_gateway(
        cfg, run_dir, None, {}, providers={"offline": ScriptedProvider("offline", fn=writer)}
    )
    return gateway.client(), gateway
