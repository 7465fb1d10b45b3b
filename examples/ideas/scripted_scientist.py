"""An offline stand-in for the LLM: answers every role of Silva's agentic search with realistic
experiments (noisy-label classification in numpy or scikit-learn), so the LLM mode runs with
no network and no key. Wire it with `scripted_fn: scripted_scientist.py:respond` in a run config.

It reads what each call is from the request's `context` (operator, node, stage; judge, critique
or select), which no real model is ever sent, and answers like a diligent engineer:
drafts a baseline, fixes bugs from the error output, tunes untried settings (as diffs of the
CONFIG line), improves with small-loss filtering, ablates one component at a time, judges runs
from their metrics, and rejects blank figures (a PNG too small to hold a plot).
Given a template's experiment (a template-based idea: no CONFIG line, settings read from
silva_params.json), it edits that script instead: one line after the settings are loaded
changes them (switch the method on, tune a number, switch one ablation on).
Faults for tests and benchmarks are opt-in (`Responder(bugs=..., blank_plots=..., sleep=...)`).
"""

import ast
import hashlib
import json
import math
import random
import re

BASE_CONFIG = {
    "lr": 0.5,
    "epochs": 150,
    "l2": 0.0001,
    "standardize": True,
    "filter_rounds": 0,
    "keep_ratio": 0.7,
    "random_filter": False,
    "noise": 0.3,
    "noise_type": "symmetric",
    "sleep": 0.0,
}
HYPERPARAMETERS = [
    {"lr": 0.1},
    {"lr": 1.0},
    {"l2": 0.001},
    {"epochs": 300},
    {"lr": 0.3, "epochs": 250},
    {"l2": 1e-05},
    {"lr": 2.0},
    {"epochs": 80},
    {"l2": 0.01},
    {"lr": 0.05, "epochs": 400},
]
IMPROVEMENTS = [
    ({"filter_rounds": 1, "keep_ratio": 0.7}, "drop the 30% highest-loss samples once and retrain"),
    ({"filter_rounds": 2, "keep_ratio": 0.75}, "two rounds of small-loss filtering keeping 75%"),
    ({"filter_rounds": 1, "keep_ratio": 0.65}, "filter more aggressively, keeping 65%"),
    ({"filter_rounds": 3, "keep_ratio": 0.8}, "three gentle filtering rounds keeping 80%"),
]
ABLATIONS = [
    ("no_standardize", {"standardize": False}, "remove feature standardization"),
    ("random_filter", {"random_filter": True}, "replace loss-ranked filtering by a random drop"),
    ("no_filtering", {"filter_rounds": 0}, "remove the filtering step entirely"),
]
BLANK_PNG_BYTES = 6000  # a matplotlib figure with axes, lines and text is several times larger

NUMPY_MODEL = '''
def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train(X, y):
    """Multinomial logistic regression by full-batch gradient descent."""
    Xb = np.hstack([X, np.ones((len(X), 1))])
    W = np.zeros((Xb.shape[1], 3))
    Y = np.eye(3)[y]
    losses = []
    for _ in range(CONFIG["epochs"]):
        P = softmax(Xb @ W)
        W -= CONFIG["lr"] * (Xb.T @ (P - Y) / len(X) + CONFIG["l2"] * W)
        losses.append(float(-np.mean(np.log(P[np.arange(len(y)), y] + 1e-12))))
    return W, losses


def proba(model, X):
    return softmax(np.hstack([X, np.ones((len(X), 1))]) @ model)
'''

SKLEARN_MODEL = '''
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss


def train(X, y):
    """scikit-learn logistic regression; C from the L2 strength, iterations from epochs."""
    model = LogisticRegression(C=1.0 / (CONFIG["l2"] * len(X) + 1e-12), max_iter=CONFIG["epochs"])
    model.fit(X, y)
    return model, [float(log_loss(y, model.predict_proba(X), labels=[0, 1, 2]))]


def proba(model, X):
    return model.predict_proba(X)
'''

EXPERIMENT = '''"""{title}

{plan}
Silva file contract: read silva_params.json, write results.json.
"""
import json
import time

import numpy as np

CONFIG = {config}

params = json.load(open("silva_params.json"))
seed = params["seed"] or 0
rng = np.random.default_rng(seed)
MEANS = np.random.default_rng(1234).normal(0.0, 0.7, size=(3, 10))  # the task is fixed across nodes


def make_data(n, gen):
    y = gen.integers(0, 3, n)
    return MEANS[y] + gen.normal(0.0, 1.0, size=(n, 10)), y


def corrupt(y, rate, gen):
    flip = gen.random(len(y)) < rate
    if CONFIG["noise_type"] == "asymmetric":
        new = (y + 1) % 3
    else:
        new = (y + gen.integers(1, 3, len(y))) % 3
    return np.where(flip, new, y)

{model}

X_train, y_train = make_data(600, np.random.default_rng(seed))
X_val, y_val = make_data(300, np.random.default_rng(10_000 + seed))
if params.get("split") == "heldout":
    X_val, y_val = make_data(1000, np.random.default_rng(99_999))  # never touched during the search
y_noisy = corrupt(y_train, CONFIG["noise"], rng)
time.sleep(CONFIG["sleep"])

if CONFIG["standardize"]:
    mu, sd = X_train.mean(axis=0), X_train.std(axis=0) + 1e-8
    X_train, X_val = (X_train - mu) / sd, (X_val - mu) / sd

start = time.perf_counter()
model, losses = train(X_train, y_noisy)
keep = np.arange(len(y_noisy))
for _ in range(CONFIG["filter_rounds"]):
    n_keep = int(CONFIG["keep_ratio"] * len(y_noisy))
    if CONFIG["random_filter"]:
        keep = rng.permutation(len(y_noisy))[:n_keep]
    else:
        p = proba(model, X_train)
        sample_loss = -np.log(p[np.arange(len(y_noisy)), y_noisy] + 1e-12)
        keep = np.argsort(sample_loss)[:n_keep]
    model, more = train(X_train[keep], y_noisy[keep])
    losses += more
val_accuracy = float(np.mean(proba(model, X_val).argmax(axis=1) == {val_labels}))
clean_kept = float(np.mean(y_noisy[keep] == y_train[keep]))

json.dump({{"loss": losses}}, open("history.json", "w"))
results = {{
    "metrics": {{"val_accuracy": val_accuracy, "clean_fraction_kept": clean_kept,
                "train_time_s": time.perf_counter() - start}},
    "artifacts": ["history.json"],
    "notes": f"{{len(keep)}} of {{len(y_noisy)}} samples used, {{len(losses)}} loss values",
}}
json.dump(results, open("results.json", "w"), indent=2)
print(json.dumps(results["metrics"]))
'''

PLOT = """import json

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

history = json.load(open("history.json"))
metrics = json.load(open("results.json"))["metrics"]
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
left.plot(history["loss"], color="#4c72b0")
left.set_xlabel("gradient step")
left.set_ylabel("training loss (noisy labels)")
left.set_title("training curve")
names = [n for n in metrics if n != "train_time_s"]
right.bar(names, [metrics[n] for n in names], color="#55a868")
right.set_ylim(0, 1)
right.set_ylabel("value")
right.set_title("validation metrics")
fig.tight_layout()
fig.savefig("training.png", dpi=80)
"""

BLANK_PLOT = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig = plt.figure(figsize=(3, 2))
fig.savefig("training.png", dpi=40)
"""

METRICS_PLOT = """import json

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

metrics = json.load(open("results.json"))["metrics"]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(list(metrics), list(metrics.values()), color="#4c72b0")
ax.set_xlabel("metric")
ax.set_ylabel("value")
ax.set_title("results of this run")
for i, v in enumerate(metrics.values()):
    ax.text(i, v, f"{v:.3g}", ha="center", va="bottom")
fig.tight_layout()
fig.savefig("metrics.png", dpi=80)
"""

LOAD = re.compile(r"^(\w+) = json\.load\(open\([\"']silva_params\.json[\"']\)\)[ \t]*$", re.MULTILINE)
EDIT = re.compile(r"^\w+\[\"params\"\]\.update\((\{.*\})\)  # scripted edit.*\n", re.MULTILINE)
SHOWN_PARAMS = re.compile(r'"params": (\{.*\})\}\. Seed')
FENCE = re.compile(r"```python\n(.*?)\n```", re.DOTALL)


def _pick(untried, prompt, node, rejected, spread=3):
    """The option a model would name: told its place among parallel proposals, that place in its
    order (any untried one when it knows fewer); otherwise, like a sampled model, one of the
    first `spread` untried options."""
    m = re.search(r"this is number (\d+) of", prompt)
    if m:
        return untried[(int(m.group(1)) - 1) % len(untried)]
    return untried[int(_unit(node + str(len(rejected))) * min(spread, len(untried)))]


def _unit(key):
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def _config_of(code):
    m = re.search(r"^CONFIG = (\{.*\})$", code or "", re.MULTILINE)
    return {**BASE_CONFIG, **(ast.literal_eval(m.group(1)) if m else {})}


def _config_diff(code, config):
    """A unified diff that rewrites the CONFIG line of `code`."""
    lines = code.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("CONFIG = "))
    return (
        f"--- a/experiment.py\n+++ b/experiment.py\n@@ -{i + 1},1 +{i + 1},1 @@\n"
        f"-{lines[i]}\n+CONFIG = {config!r}\n"
    )


class Responder:
    """Callable scripted-provider function. `bugs`: node id -> 'name_error' | 'timeout' for
    drafts; `blank_plots(operator, stage, node_id)`: whether that node's plot.py draws nothing;
    `sleep`: (median seconds, sigma) of a lognormal experiment duration; `plots`: write plot.py."""

    def __init__(self, bugs=None, blank_plots=None, sleep=None, plots=True):
        self.bugs = dict(bugs or {})
        self.blank_plots = blank_plots
        self.sleep = sleep
        self.plots = plots

    def __call__(self, call):
        users = [m for m in call.messages if m.role == "user"]
        prompt = users[0].text
        h = dict(call.context)
        if call.role == "code":
            rejected = {
                k
                for m in users[1:]
                for k in re.findall(r"the (?:setting|ablation) (.+?) was already tried", m.text)
            }
            for m in users[1:]:  # a re-ask after a race lists every claim so far
                for listed in re.findall(r"tried so far: (.+?)\. Propose one not in this list", m.text):
                    rejected |= set(listed.split("; "))
            return json.dumps(self.code(h, prompt, rejected))
        if call.role == "feedback" and "judge" in h:
            return json.dumps(self.judge(prompt))
        if call.role == "vision":
            return json.dumps(self.critique(users[0]))
        if "select" in h:
            return json.dumps(
                {
                    "node_id": h["candidates"].split(",")[0],
                    "reason": "highest primary metric; the numbers are plausible for 30% label noise",
                    "metric_best_is_sane": True,
                }
            )
        return json.dumps({"error": "unexpected call"})

    # -- code ---------------------------------------------------------------------------------------
    def tweak(self, config, node):
        """The node's own experiment duration, when durations are simulated (benchmarks)."""
        config = dict(config)
        if self.sleep is not None:
            median, sigma = self.sleep
            config["sleep"] = round(median * math.exp(sigma * _normal(node)), 3)
        return config

    def experiment(self, prompt, config, plan, node, bug=None):
        config = self.tweak(config, node)
        title = next((ln[7:] for ln in prompt.splitlines() if ln.startswith("Title: ")), "experiment")
        idea = _line(prompt, "Hypothesis")  # the idea names its library and its noise
        model = SKLEARN_MODEL if "scikit-learn" in idea else NUMPY_MODEL
        if "asymmetric" in idea.lower():
            config["noise_type"] = "asymmetric"
        if bug == "timeout":
            config["sleep"] = 3600.0
        return EXPERIMENT.format(
            title=title,
            plan=plan,
            config=repr(config),
            model=model,
            val_labels="y_valid" if bug == "name_error" else "y_val",
        )

    def code(self, h, prompt, rejected):
        op, node, stage = h["operator"], h["node"], h["stage"]
        blocks = FENCE.findall(prompt)
        parent = blocks[0] if blocks and op != "draft" else ""
        if parent and "\nCONFIG = " not in parent and LOAD.search(parent):
            return self.template_code(op, node, prompt, parent, rejected)
        config = _config_of(parent)
        plot = BLANK_PLOT if self.blank_plots and self.blank_plots(op, stage, node) else PLOT
        out = {"plot_code": plot if self.plots else None}
        if op == "draft":
            plan = "Baseline: multinomial logistic regression trained on the noisy labels."
            code = self.experiment(prompt, BASE_CONFIG, plan, node, self.bugs.get(node))
            return {**out, "plan": plan, "code": code}
        if op == "debug":
            config["sleep"] = 0.0
            plan = (
                "Fix the failure shown in the output: correct the variable names, drop the stray sleep, "
                "redraw the figure."
            )
            return {**out, "plan": plan, "code": self.experiment(prompt, config, plan, node)}
        if op == "hyperparameter":
            tried = set(re.findall(r"\{[^{}]*\}", _line(prompt, "Already tried settings")))
            untried = [s for s in HYPERPARAMETERS if json.dumps(s, sort_keys=True) not in tried | rejected]
            choice = (
                _pick(untried, prompt, node, rejected) if untried else {"lr": round(0.05 + _unit(node), 3)}
            )
            plan = "Tune " + ", ".join(f"{k}={v}" for k, v in choice.items()) + " on the working baseline."
            new = self.tweak({**config, **choice}, node)
            return {**out, "plan": plan, "hyperparameters": choice, "diff": _config_diff(parent, new)}
        if op == "ablation":
            tried = set(_line(prompt, "Already tried ablations").split("; "))
            untried = [a for a in ABLATIONS if a[0] not in tried | rejected]
            name, change, what = _pick(untried, prompt, node, rejected, spread=1) if untried else ABLATIONS[0]
            plan = f"Ablation: {what}."
            # A stale diff with the whole file beside it: Silva applies the file when the diff fails.
            stale = "--- a/experiment.py\n+++ b/experiment.py\n@@ -1,1 +1,1 @@\n-CONFIG = {}\n+CONFIG = {}\n"
            return {
                **out,
                "plan": plan,
                "ablation": name,
                "diff": stale,
                "code": self.experiment(prompt, {**config, **change}, plan, node),
            }
        if op == "crossover":
            other = (
                _config_of(FENCE.findall(prompt[prompt.index("Parent B (") :])[0])
                if "Parent B (" in prompt
                else config
            )
            merged = {**config, **{k: other[k] for k in ("filter_rounds", "keep_ratio")}}
            plan = "Crossover: parent A's optimisation settings with parent B's filtering schedule."
            return {**out, "plan": plan, "code": self.experiment(prompt, merged, plan, node)}
        change, what = IMPROVEMENTS[int(_unit(node) * len(IMPROVEMENTS))]
        plan = f"Small-loss filtering: {what}."
        return {**out, "plan": plan, "code": self.experiment(prompt, {**config, **change}, plan, node)}

    def template_code(self, op, node, prompt, parent, rejected):
        """Edit a template's experiment: one line that changes the settings it loads."""
        m = SHOWN_PARAMS.search(prompt)
        defaults = json.loads(m.group(1)) if m else {}
        edits = _edits_of(parent)
        current = {**defaults, **edits}
        out = {"plot_code": METRICS_PLOT if self.plots else None}
        if op == "debug":  # back to the template's own settings
            return {
                **out,
                "plan": "Revert the settings edit that made the run fail.",
                "code": _with_edits(parent, {}, ""),
            }
        switches = [k for k, v in current.items() if v is False]
        numbers = [k for k, v in current.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if op == "hyperparameter":
            return {**out, **_tune(prompt, node, parent, rejected, current, numbers, edits)}
        # A switch named like an ablation removes a component; any other switch turns a method on.
        ablations = [k for k in switches if k.startswith("ablat")]
        methods = [k for k in switches if k not in ablations]
        if op == "ablation":
            return {**out, **_ablate(prompt, node, parent, rejected, ablations + methods, edits)}
        if op == "crossover" and "Parent B (" in prompt:
            merged = {**edits, **_edits_of(FENCE.findall(prompt[prompt.index("Parent B (") :])[0])}
            plan = "Crossover: both parents' settings edits together."
            return {**out, "plan": plan, "code": _with_edits(parent, merged, plan)}
        # Switch the method on; like a sampled model, some nodes also double one number.
        change = {methods[0]: True} if methods else {}
        if numbers and (not methods or _unit(node) >= 0.5):
            key = numbers[int(_unit(node + "k") * len(numbers))]
            change[key] = _scaled(current[key], 2.0)
        plan = "Improve: " + (", ".join(f"{k}={v}" for k, v in change.items()) or "rerun the template") + "."
        return {**out, "plan": plan, "code": _with_edits(parent, {**edits, **change}, plan)}

    # -- judgements ---------------------------------------------------------------------------------
    def judge(self, prompt):
        metrics = dict(re.findall(r"(\w+)=([-\d.e+]+)", _line(prompt, "Metrics read from results.json")))
        failed = _line(prompt, "Silva's checks already mark this run as failed")
        plan = _line(prompt, "Plan")
        shown = "val_accuracy" if "val_accuracy" in metrics else next(iter(metrics), "val_accuracy")
        verdict = {
            "is_buggy": False,
            "reason": "ran cleanly and wrote every metric",
            "summary": f"{plan[:160]} -> {shown} {metrics.get(shown, '?')}",
        }
        if failed:
            verdict.update(is_buggy=True, reason=failed, summary=f"{plan[:160]} failed: {failed[:160]}")
        elif "val_accuracy" in metrics and float(metrics["val_accuracy"]) < 0.4:
            verdict.update(is_buggy=True, reason="validation accuracy is at chance level for three classes")
        tried = prompt.count("\n- n") if "Hyperparameter settings tried" in prompt else 0
        if "Hyperparameter settings tried" in prompt:
            verdict["converged"] = tried >= 3
        return verdict

    def critique(self, message):
        if any(len(img.png) < BLANK_PNG_BYTES for img in message.images):
            return {
                "acceptable": False,
                "reason": "the figure is blank: no axes, data or labels",
                "suggestions": ["plot the training loss curve with labelled axes"],
            }
        return {"acceptable": True, "reason": "loss curve and metric bars are labelled and match the metrics"}


def _line(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return line.split(":", 1)[1].strip() if ":" in line else ""
    return ""


def _edits_of(code):
    m = EDIT.search(code or "")
    return ast.literal_eval(m.group(1)) if m else {}


def _with_edits(code, edits, plan):
    """The template script with its one settings-edit line set to `edits` (none: removed)."""
    code = EDIT.sub("", code)
    if not edits:
        return code
    m = LOAD.search(code)
    line = f'{m.group(1)}["params"].update({edits!r})  # scripted edit: {plan[:80]}\n'
    return code[: m.end()] + "\n" + line + code[m.end() + 1 :]


def _scaled(value, factor):
    if isinstance(value, int):
        return (value * 2 if factor > 1 else value // 2) if value else 1
    return float(f"{value * factor:.4g}")


def _normal(key):
    return random.Random(key).gauss(0.0, 1.0)


respond = Responder()


def _tune(prompt, node, parent, rejected, current, numbers, edits):
    """A hyperparameter step: halve or double one number the prompt has not tried yet."""
    tried = set(re.findall(r"\{[^{}]*\}", _line(prompt, "Already tried settings")))
    options = [{k: v} for k in numbers for f in (0.5, 2.0) if (v := _scaled(current[k], f)) != current[k]]
    untried = (
        [s for s in options if json.dumps(s, sort_keys=True) not in tried | rejected]
        or options
        or [{"tuning_round": len(tried) + 1}]
    )
    choice = _pick(untried, prompt, node, rejected)
    plan = "Tune " + ", ".join(f"{k}={v}" for k, v in choice.items()) + " on the template's experiment."
    return {"plan": plan, "hyperparameters": choice, "code": _with_edits(parent, {**edits, **choice}, plan)}


def _ablate(prompt, node, parent, rejected, switches, edits):
    """An ablation step: switch on one component the prompt has not ablated yet."""
    tried = set(_line(prompt, "Already tried ablations").split("; "))
    untried = [k for k in switches if k not in tried | rejected]
    name = _pick(untried, prompt, node, rejected, spread=1) if untried else (switches + ["none"])[0]
    plan = f"Ablation: switch on {name} to remove that component."
    return {"plan": plan, "ablation": name, "code": _with_edits(parent, {**edits, name: True}, plan)}
