"""The failure report: what a run (or one idea of a forest) attempted and why it found nothing to
write up, when no stage of the idea has a best node (docs/writeup.md, "Failure report").

Offline, no LLM call: the same paper directory, sandboxed compile and number checker as a paper.
Every number is a results.tex macro read from the run's artifacts (the journal, the LLM ledger);
failure reasons are the nodes' own, quoted; `failure.json` beside the PDF holds all of it. It
states no result: no metric value, no comparison, no claim for or against the hypothesis.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from engine.claims import Ledger
from engine.journal import Journal
from engine.llm.ledger import LEDGER_FILE, read_records, totals
from engine.node import Node, NodeStatus
from sandbox.base import get_provider
from writeup.config import WriteupConfig
from writeup.draft import Paper, WriteupLog, finish
from writeup.files import FAILURE_FILE, LOG_FILE, PAPER_DIR
from writeup.latex import Section, render_paper
from writeup.results import ResultsMacros, camel, latex_escape
from writeup.run_reader import IdeaResults, RunResults

MAX_GROUPS = 10  # causes listed one by one; the rest are counted together
EXAMPLE_CHARS = 240

_EXCEPTION = re.compile(r"^exit code (-?\d+): (?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Exit|Interrupt))\b")
# Prefixes whose rest is an LLM's free text: grouped by the prefix alone (docs/search.md, status rules).
_FREE_TEXT = ("judged buggy", "plots rejected by the critique")
# Who asked (an LLM client's "role 'code' (node n0003): ") and node ids differ from node to node.
_WHO = re.compile(r"role '[^']*' \(node [^)]*\): |\(node n\d+\)\s*|\bnode n\d+\b\s*|\bn\d{4,}\b\s*")


class FailureGroup(BaseModel):
    cause: str = Field(description="the reasons' common part: an exception, a timeout, a rule")
    nodes: int
    stages: list[str]
    example_node: str
    example: str = Field(description="the first such node's reason, its first line, shortened")


class StageCount(BaseModel):
    stage: str
    nodes: int
    good: int
    buggy: int
    ended: str | None = Field(description="why the stage ended; None: it had not ended")


class FailureSummary(BaseModel):
    """What the report states, all read from the run directory."""

    idea: str
    title: str
    hypothesis: str
    primary_metric: str
    plan: list[str] = Field(description="the stages of the mode's plan, in order")
    stages: list[StageCount] = Field(description="the stages the idea reached")
    nodes: int
    good: int
    buggy: int
    failures: list[FailureGroup]
    other_failures: int = Field(0, description="failed nodes whose cause is not among `failures`")
    llm_calls: int
    llm_dollars: float
    llm_by_role: dict[str, tuple[int, float]] = Field(description="role -> (calls, dollars)")
    idea_llm_calls: int | None = Field(None, description="this idea's share, in a forest")
    idea_llm_dollars: float | None = None
    elapsed_s: float
    worker_s: float
    gpu_s: float
    budgets: dict[str, Any] = Field(description="the configured limits that were set")


def has_result(idea: IdeaResults) -> bool:
    """Whether some stage of the idea has a best node (else the writeup is a failure report)."""
    return any(s.best_node_id for s in idea.stages)


def cause_of(reason: str) -> str:
    """What failed nodes have in common: the exception an experiment died of, a timeout, or the
    status rule that failed them, without the parts that differ from node to node."""
    first = next((line.strip() for line in reason.splitlines() if line.strip()), "")
    if not first:
        return "no reason recorded"
    first = _WHO.sub("", first)
    if m := _EXCEPTION.match(first):
        return f"exit code {m.group(1)}: {m.group(2)}"
    if first.startswith("timed out"):
        return "timed out (per-node timeout)"
    if first.startswith(_FREE_TEXT):
        return next(p for p in _FREE_TEXT if first.startswith(p))
    return ": ".join(first.split(": ")[:2])[:80]


def failure_groups(nodes: Iterable[Node]) -> list[FailureGroup]:
    """The failed nodes grouped by cause, most nodes first (ties: the cause seen first)."""
    groups: dict[str, FailureGroup] = {}
    for n in nodes:
        if n.status != NodeStatus.BUGGY:
            continue
        cause = cause_of(n.reason)
        g = groups.get(cause)
        if g is None:
            first = next((line.strip() for line in n.reason.splitlines() if line.strip()), "")
            groups[cause] = FailureGroup(
                cause=cause, nodes=1, stages=[n.stage], example_node=n.id, example=first[:EXAMPLE_CHARS]
            )
            continue
        g.nodes += 1
        if n.stage not in g.stages:
            g.stages.append(n.stage)
    return sorted(groups.values(), key=lambda g: -g.nodes)


def summarize_failure(run_dir: Path, idea: IdeaResults) -> FailureSummary:
    journal = Journal.open(run_dir, read_only=True)  # a reader: no lock, never a write
    try:
        plan = list(journal.plan_stages)
        nodes = [
            n for n in journal.of_idea(idea.name) if n.stage in plan and n.status != NodeStatus.DISCARDED
        ]
        ended = {st.stage: st.ended_because for st in idea.stages}  # the stages that ended (read_run)
        stages = []
        for stage in plan:
            in_stage = [n for n in nodes if n.stage == stage]
            if not in_stage and (idea.name, stage) not in journal.stage_started:
                continue
            stages.append(
                StageCount(
                    stage=stage,
                    nodes=len(in_stage),
                    good=sum(n.status == NodeStatus.GOOD for n in in_stage),
                    buggy=sum(n.status == NodeStatus.BUGGY for n in in_stage),
                    ended=ended.get(stage),
                )
            )
        spend = journal.totals.spend
        usage = spend.by_idea.get(idea.name, spend.total) if len(journal.ideas) > 1 else spend.total
        budgets = {k: v for k, v in (journal.config.get("budgets") or {}).items() if v is not None}
        elapsed, several = journal.elapsed_s(time.time()), len(journal.ideas) > 1
    finally:
        journal.log.close()
    groups = failure_groups(nodes)
    llm = totals(read_records(run_dir / LEDGER_FILE))
    mine = llm["by_idea"].get(idea.name, {"calls": 0, "dollars": 0.0})
    return FailureSummary(
        idea=idea.name,
        title=idea.title,
        hypothesis=idea.hypothesis or idea.abstract,
        primary_metric=idea.primary.name,
        plan=plan,
        stages=stages,
        nodes=len(nodes),
        good=sum(n.status == NodeStatus.GOOD for n in nodes),
        buggy=sum(n.status == NodeStatus.BUGGY for n in nodes),
        failures=groups[:MAX_GROUPS],
        other_failures=sum(g.nodes for g in groups[MAX_GROUPS:]),
        llm_calls=llm["run"]["calls"],
        llm_dollars=llm["run"]["dollars"],
        llm_by_role={role: (t["calls"], t["dollars"]) for role, t in sorted(llm["by_role"].items())},
        idea_llm_calls=mine["calls"] if several else None,
        idea_llm_dollars=mine["dollars"] if several else None,
        elapsed_s=elapsed,
        worker_s=usage.seconds,
        gpu_s=usage.gpu_s,
        budgets=budgets,
    )


def failure_macros(s: FailureSummary, idea: str) -> ResultsMacros:
    """Every number the report prints, as results.tex macros (the number checker's source)."""
    out = ResultsMacros(Ledger(idea=idea))  # no claim: the ledger is empty
    out.number("RunNodes", s.nodes, "nodes grown for this idea in the plan's stages")
    out.number("RunGoodNodes", s.good, "of them, nodes that ran cleanly")
    out.number("RunBuggyNodes", s.buggy, "of them, nodes that failed (buggy)")
    out.number("RunStages", len(s.stages), "stages of the plan the idea reached")
    out.number("PlanStages", len(s.plan), "stages of the mode's plan")
    for st in s.stages:
        base = camel(st.stage)
        out.number(base + "Nodes", st.nodes, f"nodes grown in stage {st.stage}")
        out.number(base + "Good", st.good, f"nodes of stage {st.stage} that ran cleanly")
        out.number(base + "Buggy", st.buggy, f"nodes of stage {st.stage} that failed")
    for i, g in enumerate(s.failures):
        out.number(f"Failure{_letter(i)}Nodes", g.nodes, f"failed nodes whose cause is: {g.cause}")
    if s.other_failures:
        out.number("FailureOtherNodes", s.other_failures, "failed nodes of the other causes")
    out.number("LlmCalls", s.llm_calls, "LLM calls of the run (llm_ledger.jsonl)")
    out.number("LlmDollars", s.llm_dollars, "LLM dollars of the run (llm_ledger.jsonl)", digits=4)
    for role, (calls, dollars) in s.llm_by_role.items():
        out.number(f"Llm{camel(role)}Calls", calls, f"LLM calls of role {role}")
        out.number(f"Llm{camel(role)}Dollars", dollars, f"LLM dollars of role {role}", digits=4)
    if s.idea_llm_calls is not None and s.idea_llm_dollars is not None:
        out.number("IdeaLlmCalls", s.idea_llm_calls, "LLM calls made for this idea")
        out.number("IdeaLlmDollars", s.idea_llm_dollars, "LLM dollars spent for this idea", digits=4)
    if s.elapsed_s >= 120:
        out.number("Elapsed", s.elapsed_s / 60, "wall clock of the run's sessions, minutes", digits=1)
    else:
        out.number(
            "Elapsed", s.elapsed_s, "wall clock of the run's sessions, seconds", digits=_digits(s.elapsed_s)
        )
    out.number(
        "WorkerSeconds",
        s.worker_s,
        "seconds jobs held a worker (compute_used events)",
        digits=_digits(s.worker_s),
    )
    if s.gpu_s:
        out.number("GpuHours", s.gpu_s / 3600, "GPU-hours held (compute_used events)", digits=3)
    return out


def _letter(i: int) -> str:
    return chr(ord("A") + i)


def failure_report(run: RunResults, s: FailureSummary, macros: ResultsMacros, template: str) -> str:
    first = s.stages[0] if s.stages else None
    why = (
        f"its first stage, \\emph{{{latex_escape(first.stage)}}}, ended with no node to build on"
        if first is not None
        else "no stage of its plan ran"
    )
    abstract = (
        "This report was written by Silva from the artifacts of the run "
        f"\\texttt{{{latex_escape(run.name)}}}. The run has no result to report for this idea: {why}. "
        "It grew \\RunNodes{} nodes in "
        "\\RunStages{} of the plan's \\PlanStages{} stages; \\RunBuggyNodes{} of them failed and "
        "\\RunGoodNodes{} ran cleanly. The report states what was attempted, why the nodes failed and "
        "what the run spent. It makes no claim about the idea."
    )
    sections = [
        Section("What was attempted", _attempted(run, s)),
        Section("Why the nodes failed", _why(s)),
        Section("What the run spent", _spent(s, macros)),
        Section(
            "What this report does not claim",
            "No node of the idea gave a value of the primary metric "
            f"\\texttt{{{latex_escape(s.primary_metric)}}} that a stage could choose as its best, so this "
            "report states no value of it, compares nothing with anything, and neither supports nor "
            "refutes the hypothesis. The failures above are those of the experiments this run wrote and "
            "ran; whether a working experiment would support the hypothesis is not known from this run.",
        ),
    ]
    tex = render_paper(
        template=template,
        title="Failure report: " + latex_escape(s.title),
        author="Silva \\textperiodcentered{} automated failure report",
        abstract=abstract,
        sections=sections,
        cite=False,
    )
    if template == "conference":  # two columns: the tables span both
        tex = tex.replace("\\begin{table}", "\\begin{table*}").replace("\\end{table}", "\\end{table*}")
    return tex


def _attempted(run: RunResults, s: FailureSummary) -> str:
    text = f"\\textbf{{{latex_escape(s.title)}.}} "
    if s.hypothesis:
        text += f"The hypothesis the run set out to test: {latex_escape(s.hypothesis)}\n\n"
    text += (
        f"The search ran in {latex_escape(run.mode)} mode through the stages "
        + ", ".join(f"\\emph{{{latex_escape(p)}}}" for p in s.plan)
        + ". Table~\\ref{tab:stages} counts the nodes of each stage the idea reached.\n\n"
    )
    rows = "\n".join(
        f"{latex_escape(st.stage)} & \\{camel(st.stage)}Nodes{{}} & \\{camel(st.stage)}Good{{}} & "
        f"\\{camel(st.stage)}Buggy{{}} \\\\"
        for st in s.stages
    )
    text += (
        "\\begin{table}[!ht]\\centering\\small\n\\caption{The stages the idea reached: nodes grown, "
        "nodes that ran cleanly, nodes that failed.}\\label{tab:stages}\n\\begin{tabular}{lccc}\\toprule\n"
        "Stage & nodes & good & buggy \\\\ \\midrule\n"
        + rows
        + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
    )
    ends = [
        f"\\item[{latex_escape(st.stage)}:] "
        + (latex_escape(st.ended) if st.ended is not None else "had not ended when this report was written")
        for st in s.stages
    ]
    if ends:
        text += (
            "How each stage ended:\n\\begin{description}\\small\n"
            + "\n".join(ends)
            + "\n\\end{description}\n"
        )
    unreached = [p for p in s.plan if p not in {st.stage for st in s.stages}]
    if unreached:
        text += "Stages not reached: " + ", ".join(f"\\emph{{{latex_escape(p)}}}" for p in unreached) + ".\n"
    return text


def _why(s: FailureSummary) -> str:
    if not s.failures:
        return "No node failed: the nodes that ran gave no value of the primary metric to choose a best by."
    items = []
    for i, g in enumerate(s.failures):
        where = ", ".join(f"\\emph{{{latex_escape(st)}}}" for st in g.stages)
        items.append(
            f"\\item \\textbf{{{_plain(g.cause)}}}: \\Failure{_letter(i)}Nodes{{}} node(s), in {where}. "
            f"For example node \\texttt{{{latex_escape(g.example_node)}}}: "
            f"\\emph{{{_plain(g.example)}}}"
        )
    if s.other_failures:
        items.append("\\item \\textbf{other causes}: \\FailureOtherNodes{} node(s).")
    return (
        "The failed nodes grouped by cause (the reason each node's attempt recorded; an example of each "
        "quoted as recorded, shortened):\n\\begin{itemize}\n" + "\n".join(items) + "\n\\end{itemize}\n"
    )


def _digits(seconds: float) -> int:
    """A run that failed fast took a fraction of a second: "0 seconds" would read as nothing."""
    return 1 if seconds < 10 else 0


def _spent(s: FailureSummary, macros: ResultsMacros) -> str:
    text = (
        f"The run's sessions took \\Elapsed{{}} {'minutes' if s.elapsed_s >= 120 else 'seconds'} of "
        "wall clock; jobs held workers for "
        "\\WorkerSeconds{} seconds"
        + (" and \\GpuHours{} GPU-hours" if "GpuHours" in macros.macros else "")
        + (" for this idea" if s.idea_llm_calls is not None else "")
        + ". The run made \\LlmCalls{} LLM calls costing \\$\\LlmDollars{}"
        + (
            " (\\IdeaLlmCalls{} calls and \\$\\IdeaLlmDollars{} for this idea)"
            if "IdeaLlmCalls" in macros.macros
            else ""
        )
        + ".\n\n"
    )
    if s.llm_by_role:
        rows = "\n".join(
            f"{latex_escape(role)} & \\Llm{camel(role)}Calls{{}} & \\Llm{camel(role)}Dollars{{}} \\\\"
            for role in s.llm_by_role
        )
        text += (
            "\\begin{table}[!ht]\\centering\\small\n\\caption{LLM calls and dollars by role "
            "(llm\\_ledger.jsonl).}\\label{tab:llm}\n\\begin{tabular}{lcc}\\toprule\nRole & calls & "
            "dollars \\\\ \\midrule\n" + rows + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
        )
    if s.budgets:
        text += "Limits configured: " + ", ".join(
            f"\\texttt{{{latex_escape(k)}}} {latex_escape(str(v))}" for k, v in s.budgets.items()
        )
        text += ".\n"
    return text


def _plain(text: str) -> str:
    """A recorded reason as LaTeX: specials escaped, characters outside ASCII shown as `?`
    (pdflatex has no glyph for most of what a traceback may hold)."""
    return latex_escape(text.encode("ascii", "replace").decode())


def write_failure_report(
    run_dir: Path,
    run: RunResults,
    idea: IdeaResults,
    cfg: WriteupConfig,
    sandbox: str,
    sandbox_options: dict[str, Any] | None,
) -> Path:
    """RUN_DIR/paper/<idea>/paper.pdf as the failure report; returns its path."""
    paper_dir = run_dir / PAPER_DIR / idea.name
    paper_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize_failure(run_dir, idea)
    macros = failure_macros(summary, idea.name)
    macros.ledger.write(paper_dir)  # no claim: the reviewer's integrity check holds the text to none
    (paper_dir / FAILURE_FILE).write_text(summary.model_dump_json(indent=2))
    provider = get_provider(sandbox, **(sandbox_options or {}))
    paper = Paper(run, idea, cfg, provider, macros, paper_dir, WriteupLog(paper_dir / LOG_FILE))
    paper.log("start", idea=idea.name, template=cfg.template, offline=True, failure_report=True)
    started = time.monotonic()
    (paper_dir / "results.tex").write_text(macros.tex())
    version = paper.try_version(failure_report(run, summary, macros, cfg.template), "", "failure-report")
    return finish(paper, version, started)
