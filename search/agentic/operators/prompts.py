"""Prompts of the operators. Built from the journal on the driver (code proposals) or from the
attempt's own outputs on the worker (judgement, plot critique).

What each call is (operator, node, step) travels beside the prompt as the request's `context`,
which scripted providers answer by and no real provider sends (engine/llm/types.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.llm.prompt_budget import Part, PromptBudget
from engine.node import MetricSpec, MetricValue, Node, NodeStatus
from search.agentic.operators.outcome import operator_outcome, summary, variant
from search.idea import Idea

CODE_CHARS = 12_000  # code shown back to the model, per file
OUTPUT_CHARS = 2_500  # stdout/stderr tail shown for debugging and judging

STAGE_GOALS = {
    "preliminary": "Stage 1, preliminary implementation: get a simple, correct, working implementation "
    "of the idea's core experiment on a small setting. Correctness first; no tuning yet.",
    "hyperparameter": "Stage 2, hyperparameter tuning: tune the hyperparameters of the working "
    "implementation (learning rate, regularization, epochs, sizes) without changing its method.",
    "agenda": "Stage 3, research agenda: carry out the idea's planned experiments; implement and improve "
    "the proposed method and compare it with the tuned baseline.",
    "ablation": "Stage 4, ablations: show which components of the final method matter by removing or "
    "replacing one component at a time.",
}

OPERATOR_TASKS = {
    "draft": "Write a first complete implementation: a plan and the whole experiment.py in `code`, and a "
    "plot.py in `plot_code`.",
    "debug": "The shown experiment is buggy. Find the cause from its error and output and fix it; change "
    "nothing else. Return a `diff` against experiment.py or the whole file in `code` (and `plot_code` if the "
    "plots were the problem).",
    "improve": "Improve the shown experiment with one focused, well-motivated change towards the stage goal. "
    "Return a `diff` against experiment.py or the whole file in `code`.",
    "hyperparameter": "Try one new hyperparameter setting on the shown experiment. Set `hyperparameters` to "
    "exactly the values you change, choose a setting not yet tried (list below), and return a `diff` or the "
    "whole file.",
    "ablation": "Remove or replace exactly one component of the shown experiment to measure its "
    "contribution. Set `ablation` to a short name of what you removed; choose one not yet ablated (list "
    "below).",
    "crossover": "Combine the strengths of the two shown experiments (parent A and parent B) into one. "
    "Return the whole file in `code`.",
}

SYSTEM = (
    "You are a careful machine-learning research engineer. You write small, self-contained, correct Python "
    "experiments, read their outputs critically, and report results honestly."
)


def contract(
    metrics: Sequence[MetricSpec],
    timeout_s: float,
    memory_mb: int | None,
    data: Sequence[str],
    params: Mapping[str, Any] | None = None,
    files: Sequence[str] = (),
) -> str:
    """`params` and `files`: a template's default settings and its other files (template-based ideas)."""
    declared = ", ".join(f"{m.name} ({m.direction}{', primary' if m.primary else ''})" for m in metrics)
    where = (
        f"a working directory holding the template's other files ({', '.join(files)})"
        if files
        else "an empty working directory"
    )
    lines = [
        "How the experiment runs:",
        f"- `python experiment.py` in {where}, no network, numpy / scipy / scikit-learn / matplotlib "
        "available.",
        '- It reads silva_params.json: {"seed": int, "split": "search" or "heldout", "node_id": str, '
        f'"stage": str, "params": {json.dumps(dict(params or {}))}}}. Seed every random generator with '
        "`seed`.",
        '- It writes results.json: {"metrics": {name: number}, "artifacts": [files to keep], "notes": '
        f"str}} with metrics {declared}. "
        "Metrics are read only from this file, never from printed output.",
        '- When split is "heldout", compute the metrics on the held-out data instead of the validation data; '
        "during the search the held-out data must never be used.",
        f"- Hard limits: {timeout_s:g} s wall clock, "
        f"{'no memory cap' if memory_mb is None else f'{memory_mb} MB memory'}. Keep it small and fast.",
        "- plot.py runs afterwards in the same directory; it reads files the experiment saved and writes PNG "
        "figures.",
    ]
    if data:
        lines.append(
            "- Data files: "
            + ", ".join(f"data/{d}" for d in data)
            + ' (held-out files appear under data/heldout/ only when split is "heldout").'
        )
    return "\n".join(lines)


def fmt_metrics(metrics: Sequence[MetricValue]) -> str:
    return ", ".join(f"{m.name}={m.value:.4g}" for m in metrics) or "none"


def node_line(n: Node) -> str:
    note, what = summary(n), variant(n)
    return (
        f"- {n.id} ({n.kind}{', ' + str(what) if what else ''}, {n.status.value}): {fmt_metrics(n.metrics)}; "
        f"{note[:200]}"
    )


def fence(text: str, lang: str = "python") -> str:
    if len(text) > CODE_CHARS:
        text = text[:CODE_CHARS] + "\n# ... (cut)"
    return f"```{lang}\n{text}\n```"


def show_node(n: Node, title: str, with_output: bool) -> str:
    # An unfinished node shown as a parent is one whose run is in and whose judgement is not.
    state = n.status.value if n.is_finished else "run finished, not judged yet"
    parts = [f"{title} ({n.id}, {n.kind}, {state}). Plan: {n.plan}", "experiment.py:", fence(n.code)]
    outcome = operator_outcome(n)
    plot = outcome.plot_code
    if plot:
        parts += ["plot.py:", fence(plot)]
    parts.append(f"Metrics: {fmt_metrics(n.metrics)}")
    if n.status == NodeStatus.BUGGY:
        parts.append(f"Why it is buggy: {n.reason}")
    critique = outcome.plot_critique
    if critique is not None and not critique.acceptable:
        parts.append(f"Plot critique: {critique.reason} {'; '.join(critique.suggestions)}")
    if with_output and n.execution is not None:
        parts.append("stdout (end):\n" + fence(n.execution.stdout_tail[-OUTPUT_CHARS:], "text"))
        parts.append("stderr (end):\n" + fence(n.execution.stderr_tail[-OUTPUT_CHARS:], "text"))
    return "\n".join(parts)


@dataclass
class CodeRequest:
    """Everything a code proposal prompt shows; assembled by the search from the journal."""

    idea: Idea
    stage: str
    operator: str
    contract: str
    parent: Node | None = None
    second: Node | None = None
    history: list[Node] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    parallel: tuple[int, int] = (1, 1)  # (this proposal's place, how many) among those written at once


def _whole(text: str) -> Part:
    return Part(text + "\n\n", min_chars=len(text) + 2)


def code_prompt(r: CodeRequest, budget: PromptBudget) -> str:
    """The proposal prompt, fitted to the code model's context: the idea, the stage's goal, the
    contract and the task whole; the parent next (its code, then its output, a log kept by its
    end), the second parent, and the stage's node history cut first."""
    parts = [_whole("Research idea:\n" + r.idea.describe()), _whole(STAGE_GOALS[r.stage]), _whole(r.contract)]
    if r.parent is not None:
        title = "Parent A" if r.second is not None else "Current experiment"
        parts.append(Part(show_node(r.parent, title, with_output=r.operator == "debug") + "\n\n", priority=1))
    if r.second is not None:
        parts.append(Part(show_node(r.second, "Parent B", with_output=False) + "\n\n", priority=2))
    if r.history:
        history = "Other nodes of this stage so far:\n" + "\n".join(node_line(n) for n in r.history)
        parts.append(Part(history + "\n\n", priority=3, keep="tail"))
    if r.operator in ("hyperparameter", "ablation"):
        what = "settings" if r.operator == "hyperparameter" else "ablations"
        tried = f"Already tried {what} (do not repeat): " + ("; ".join(r.tried) if r.tried else "none yet")
        parts.append(Part(tried + "\n\n", min_chars=min(len(tried), 1500)))
        place, count = r.parallel
        if count > 1:
            parts.append(
                _whole(
                    f"Parallel proposals: {count} proposals for new {what} are being written at this "
                    f"moment, this is number {place} of {count}. So that they differ, propose your choice "
                    f"number {place} among the untried {what}, in your order of promise; if you know fewer "
                    "than that, propose any untried one."
                )
            )
    parts.append(
        Part("Your task: " + OPERATOR_TASKS[r.operator], min_chars=len(OPERATOR_TASKS[r.operator]) + 11)
    )
    return budget.fit(parts, fixed=SYSTEM)


def judge_prompt(
    *,
    plan: str,
    code: str,
    exit_line: str,
    stdout: str,
    stderr: str,
    metrics: str,
    results_notes: str,
    rule_problem: str,
    plots: str,
    tuning_history: str,
    budget: PromptBudget,
) -> str:
    """The judge's prompt, fitted to the feedback model's context: the outcome (exit, metrics,
    checks) and the question whole; the output's tails next, the code and the tuning history cut
    first."""
    parts = [
        Part(f"Plan: {plan}\n\n", min_chars=min(len(plan), 600) + 8),
        Part("experiment.py:\n" + fence(code) + "\n\n", priority=3),
        _whole(f"Process: {exit_line}"),
        Part("stdout (end):\n" + fence(stdout[-OUTPUT_CHARS:], "text") + "\n\n", priority=2, keep="tail"),
        Part("stderr (end):\n" + fence(stderr[-OUTPUT_CHARS:], "text") + "\n\n", priority=1, keep="tail"),
        _whole(f"Metrics read from results.json: {metrics}"),
        Part(f"Notes in results.json: {results_notes or 'none'}\n\n", priority=2),
        _whole(f"Plots: {plots}"),
    ]
    if rule_problem:
        parts.append(_whole(f"Silva's checks already mark this run as failed: {rule_problem}"))
    if tuning_history:
        parts += [
            Part(
                f"Hyperparameter settings tried in this stage:\n{tuning_history}\n", priority=4, keep="tail"
            ),
            _whole("Also set `converged`: true if further tuning is unlikely to improve the primary metric."),
        ]
    parts.append(
        Part(
            "Is this run buggy (crashed, wrong, leaking evaluation data, implausible metrics), and what did "
            "it show?",
            min_chars=200,
        )
    )
    return budget.fit(parts)


def critique_prompt(*, plan: str, metrics: str, names: Sequence[str]) -> str:
    return "\n\n".join(
        [
            f"Plan of the experiment: {plan}",
            f"Its metrics: {metrics}",
            f"Figures attached, in order: {', '.join(names)}.",
            "Are they readable, labelled (axes, legend, title), non-empty, and consistent with the metrics?",
        ]
    )


def selection_prompt(*, idea: Idea, stage: str, metric: MetricSpec, candidates: Sequence[Node]) -> str:
    lines = [node_line(n) + f" | plan: {n.plan[:200]}" for n in candidates]
    return "\n\n".join(
        [
            "Research idea:\n" + idea.describe(),
            f"Candidates for the best node of stage {stage}, ranked by the primary metric {metric.name} "
            f"({metric.direction}):",
            "\n".join(lines),
            "Keep the first candidate unless its result looks invalid (a leak, a bug, an implausible number) "
            "or the top candidates are tied on the metric and another is clearly the better experiment. "
            "Answer with the chosen node_id.",
        ]
    )
