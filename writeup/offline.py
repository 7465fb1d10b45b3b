"""The offline writer: a results report from templates, no LLM. Every number it prints is a
results.tex macro, so the number checker holds by construction and the PDF shows the run's values."""

from __future__ import annotations

import re

from engine.claims import Claim, GroupSummary
from writeup.figures import Figure
from writeup.latex import Section, render_paper
from writeup.results import ResultsMacros, camel, latex_escape
from writeup.run_reader import IdeaResults, RunResults


def _m(macros: ResultsMacros, name: str) -> str:
    return f"\\{name}{{}}" if name in macros.macros else "--"


def _meansd(macros: ResultsMacros, base: str) -> str:
    if base + "Mean" not in macros.macros:
        return "--"
    if base + "Sd" not in macros.macros:  # one run: its value, no spread
        return f"\\{base}Mean{{}}"
    return f"\\pmsd{{\\{base}Mean}}{{\\{base}Sd}}"


def abstract(run: RunResults, idea: IdeaResults, macros: ResultsMacros) -> str:
    text = (
        "This report was written by Silva from the artifacts of the run "
        f"\\texttt{{{latex_escape(run.name)}}}. "
    )
    if idea.hypothesis:
        hypothesis = idea.hypothesis.strip().rstrip(". ").removeprefix("Hypothesis: ")
        text += f"It tests the hypothesis: {latex_escape(hypothesis)}. "
    text += (
        "The search grew \\RunNodes{} experiment nodes (\\RunBuggyNodes{} of them failed) over "
        "\\RunStages{} stages, "
        "and replicated each stage's best node over \\RunSeeds{} seeds. "
    )
    main = macros.main
    if main is not None:
        text += claim_sentence(main, macros, "Main") + " " + headline_caveats(main, macros)
    return text.rstrip()


def _group_value(macros: ResultsMacros, base: str, which: str, g: GroupSummary) -> str:
    """mean ± sd, or the mean alone with "one run" for a group of one (one value has no sd)."""
    if g.sd is None:
        return f"\\{base}{which}Mean{{}} (one run)"
    return f"\\pmsd{{\\{base}{which}Mean}}{{\\{base}{which}Sd}}"


def claim_sentence(claim: Claim, macros: ResultsMacros, base: str | None = None) -> str:
    """The one sentence the offline writer states about a claim: its verdict, never more, with
    the figures behind it; it ends with \\claim{id} so a checker need not guess which claim."""
    base = base or macros.claim_base[claim.id]
    if base == "Main":
        subj, ref = (
            _group_value(macros, "Main", "Method", claim.subject),
            _group_value(macros, "Main", "Baseline", claim.reference),
        )
    else:
        subj, ref = (_group_macro(macros, claim, g) for g in (claim.subject, claim.reference))
    metric = latex_escape(claim.metric) + (" (held-out test)" if claim.role == "test" else "")
    a, b = (called(macros, g) for g in (claim.subject, claim.reference))
    stats = _stats(macros, base, claim)
    if claim.verdict == "untested":
        why = (
            "a group of one run"
            if min(claim.subject.n, claim.reference.n) < 2
            else "no spread in either group"
        )
        sentence = f"On {metric}, {a} reached {subj} and {b} {ref}; the difference was not tested ({why})."
    elif claim.verdict == "no detectable difference":
        sentence = (
            f"On {metric}, {a} and {b} showed no detectable difference at $\\alpha=\\Alpha{{}}$: "
            f"{subj} against {ref}, a difference of \\{base}Diff{{}} (\\CiLevel\\% CI "
            f"[\\{base}DiffLo{{}}, \\{base}DiffHi{{}}]; {stats})."
        )
    else:
        word = "better" if claim.verdict == "better" else "worse"
        sentence = (
            f"On {metric}, {a} was significantly {word} than {b}: {subj} against {ref} "
            f"(difference \\{base}Diff{{}}, \\CiLevel\\% CI "
            f"[\\{base}DiffLo{{}}, \\{base}DiffHi{{}}]; {stats})."
        )
    return sentence + f"\\claim{{{claim.id}}}"


def called(macros: ResultsMacros, g: GroupSummary) -> str:
    """How prose names a group: its readable name, "the" before the names Silva gives ("the tuned
    baseline", "the no rff ablation"), none before the method's own name."""
    name = macros.name(g.label)
    kind = name.split(" (")[0]
    return latex_escape(f"the {name}" if kind.endswith("baseline") or kind.endswith(" ablation") else name)


def _group_macro(macros: ResultsMacros, claim: Claim, g: GroupSummary) -> str:
    base = macros.group_base[(claim.stage, g.label)] + camel(claim.metric)
    return f"\\{base}Mean{{}} (one run)" if g.sd is None else f"\\pmsd{{\\{base}Mean}}{{\\{base}Sd}}"


def _stats(macros: ResultsMacros, base: str, claim: Claim) -> str:
    if claim.test is None:
        return ""
    out = f"{_test_name(claim.test)} $p=\\{base}P{{}}$"
    if base + "G" in macros.macros:
        out += f", Hedges' $g=\\{base}G{{}}$"
        if base + "GLo" in macros.macros:
            out += f" [\\{base}GLo{{}}, \\{base}GHi{{}}]"
    return out + f", $n=\\{base}N{{}}$ per group" if base == "Main" else out


def headline_caveats(claim: Claim, macros: ResultsMacros) -> str:
    """What a reader must know to weigh the headline: the metric's role and unequal budgets."""
    out = ""
    if claim.role == "selection":
        out += (
            f"The run measured no held-out test metric: {latex_escape(claim.metric)} is the metric the "
            "search selected on, so this comparison favours the selected groups. "
        )
    if claim.budgets_matched is False:
        sub = f"\\{camel(claim.stage)}SearchNodes{{}}"
        ref_stage = _best_of(claim.reference.label)
        ref = f"\\{camel(ref_stage)}SearchNodes{{}}" if ref_stage else "a different number of"
        out += (
            f"The budgets were not matched: {called(macros, claim.subject)} came from a search of {sub} "
            f"nodes and {called(macros, claim.reference)} from one of {ref} nodes. "
        )
    return out


def _best_of(label: str) -> str | None:
    m = re.search(r"\(best of ([^()]*)\)\s*$", label)
    return m.group(1) if m else None


def _test_name(test: str) -> str:
    return {
        "welch": "Welch's $t$-test",
        "student": "Student's $t$-test",
        "mannwhitney": "Mann--Whitney $U$ test",
    }[test]


def stage_table(idea: IdeaResults, macros: ResultsMacros, si: int) -> str:
    stage = idea.stages[si]
    st = camel(stage.stage)
    metrics = [m.name for m in idea.metrics if any(m.name in g for g in stage.groups.values())]
    head = " & ".join(
        latex_escape(m) + (" $\\uparrow$" if s.direction == "maximize" else " $\\downarrow$")
        for m in metrics
        for s in idea.metrics
        if s.name == m
    )
    rows = []
    for gi, (label, per_metric) in enumerate(stage.groups.items()):
        g = chr(ord("A") + gi)
        cells = [_meansd(macros, f"{st}{g}{camel(m)}") if m in per_metric else "--" for m in metrics]
        n = _m(macros, f"{st}{g}{camel(metrics[0])}N")
        rows.append(f"{_row_name(macros, st, g, label)} & {n} & " + " & ".join(cells) + " \\\\")
    cols = "l" + "c" * (len(metrics) + 1)
    return (
        "\\begin{table}[!ht]\\centering\\footnotesize\n\\caption{Stage "
        f"\\emph{{{latex_escape(stage.stage)}}}: mean\\,$\\pm$\\,sd over seeds for each group of the stage's "
        f"aggregation.}}\\label{{tab:{st.lower()}}}\n\\begin{{tabular}}{{{cols}}}\\toprule\nGroup & $n$ & "
        f"{head} \\\\ \\midrule\n" + "\n".join(rows) + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
    )


_SHORT_VERDICT = {
    "better": "better",
    "worse": "worse",
    "no detectable difference": "none found",
    "untested": "--",
}


def tests_table(idea: IdeaResults, macros: ResultsMacros) -> str:
    """Every tested claim on the headline metric: statistic, df, p, g and the ledger's verdict."""
    main = macros.main
    if main is None:
        return ""
    rows = []
    for c in macros.ledger.claims:
        base = macros.claim_base[c.id]
        if c.metric != main.metric or c.test is None or c.same_runs_as is not None:
            continue
        st = camel(c.stage)
        a, b = (macros.group_base[(c.stage, g.label)][len(st) :] for g in (c.subject, c.reference))
        rows.append(
            f"\\{st}Group{a}{{}} vs.\\ \\{st}Group{b}{{}} & {_m(macros, base + 'Stat')} & "
            f"{_m(macros, base + 'Df')} & {_m(macros, base + 'P')} & {_m(macros, base + 'G')} & "
            f"{_SHORT_VERDICT[c.verdict]} \\\\"
        )
    if not rows:
        return ""
    return (
        "\\begin{table}[ht]\\centering\\small\n\\caption{Each stage's subject against the other groups "
        f"of its aggregation on {latex_escape(main.metric)}: {_test_name(macros.ledger.test)} (statistic, "
        "degrees of freedom, two-sided $p$), Hedges' $g$ (positive: the subject is higher) and the verdict "
        "at $\\alpha=\\Alpha{}$. Groups of one run are not tested.}\\label{tab:tests}\n"
        "\\begin{tabular}{lccccl}\\toprule\nComparison & statistic & df & $p$ & $g$ & verdict \\\\ "
        "\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
    )


def findings_text(macros: ResultsMacros) -> str:
    """One ledger sentence per claim on the headline metric; repeats of a comparison are named, not
    restated."""
    main = macros.main
    if main is None:
        return ""
    items = []
    for c in macros.ledger.claims:
        if c.metric != main.metric or c.headline:
            continue
        if c.same_runs_as is not None:
            items.append(
                f"\\item Stage \\emph{{{latex_escape(c.stage)}}}: {called(macros, c.subject)} against "
                f"{called(macros, c.reference)} repeats the runs of claim \\texttt{{{c.same_runs_as}}}; "
                "it is no separate finding."
            )
            continue
        items.append(f"\\item Stage \\emph{{{latex_escape(c.stage)}}}: " + claim_sentence(c, macros))
    if not items:
        return ""
    return (
        "The other comparisons on the same metric:\n\\begin{itemize}\n"
        + "\n".join(items)
        + "\n\\end{itemize}\n"
    )


def search_table(idea: IdeaResults, macros: ResultsMacros) -> str:
    rows = []
    for stage in idea.stages:
        st = camel(stage.stage)
        best = latex_escape(stage.best_node_id or "--")
        rows.append(
            f"{latex_escape(stage.stage)} & \\{st}Nodes{{}} & {stage.good} & {stage.buggy} & "
            f"\\texttt{{{best}}} \\\\"
        )
    reasons = "\n".join(
        f"\\item[{latex_escape(s.stage)}:] {latex_escape(s.ended_because)}" for s in idea.stages
    )
    return (
        "\\begin{table}[!ht]\\centering\\small\n\\caption{The search tree, stage by stage: nodes grown, "
        "nodes that ran cleanly or failed, and the node chosen as the stage's "
        "best.}\\label{tab:search}\n\\begin{tabular}{lcccc}\\toprule\nStage & nodes & good & buggy & best "
        "node \\\\ \\midrule\n"
        + "\n".join(rows)
        + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
        + "Why each stage ended:\n\\begin{description}\\small\n"
        + reasons
        + "\n\\end{description}\n"
    )


def settings_text(idea: IdeaResults, macros: ResultsMacros) -> str:
    """The settings of the method's node: the headline's subject, never a later stage's best (which
    may be an ablation)."""
    main = macros.main
    stage = next((s for s in idea.stages if main is not None and s.stage == main.stage), idea.final)
    params = {**idea.fixed_settings, **(stage.best_params if stage else {})}
    if not params:
        return ""
    rows = "\n".join(
        f"\\texttt{{{latex_escape(k)}}} & \\texttt{{{latex_escape(_short(v))}}} \\\\"
        for k, v in params.items()
    )
    return (
        f"The settings of {_settings_of(macros, main)}:\n\n"
        "\\begin{center}\\small\\begin{tabular}{ll}\\toprule\n"
        "Setting & Value \\\\ \\midrule\n" + rows + "\n\\bottomrule\\end{tabular}\\end{center}\n"
    )


def _label_says_name(macros: ResultsMacros, label: str) -> bool:
    """Whether a group's label starts with its readable name ("baseline (best of preliminary)"),
    so the label alone names it."""
    return label.lower().startswith(macros.name(label).lower())


def _row_name(macros: ResultsMacros, st: str, g: str, label: str) -> str:
    """A table's group: its name, and its label where that differs, so a reader finds the node (a
    label that starts with the name, "baseline (best of preliminary)", alone)."""
    if _label_says_name(macros, label):
        return f"\\{st}Group{g}Label{{}}"
    return f"\\{st}Group{g}{{}} {{\\scriptsize(\\texttt{{\\{st}Group{g}Label{{}}}})}}"


def _settings_of(macros: ResultsMacros, main: Claim | None) -> str:
    if main is None:
        return "the final best node"
    label = main.subject.label
    if _label_says_name(macros, label):
        return latex_escape(label)
    return f"{called(macros, main.subject)} (\\texttt{{{latex_escape(label)}}})"


def _short(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)[:60]


def figure_env(fig: Figure, caption: str) -> str:
    # A caption is one paragraph: a blank line in a model's caption ends it early and the paper
    # does not compile ("Paragraph ended before \caption@prepareanchor was complete").
    caption = " ".join(caption.split())
    return (
        f"\\begin{{figure}}[ht]\\centering\n\\includegraphics[width=\\linewidth]{{figures/{fig.name}}}\n"
        f"\\caption{{{caption}}}\\label{{{fig.label}}}\n\\end{{figure}}\n"
    )


TEMPLATE_CAPTIONS = {
    "fig_stages.png": "The primary metric of every group, stage by stage: bars show the mean, whiskers one "
    "sd, dots the individual seeds.",
    "fig_main.png": "Every metric of the headline comparison (arrows: the better direction); bars, whiskers "
    "and dots as in the stage overview.",
}


def _opening(run: RunResults, idea: IdeaResults, macros: ResultsMacros) -> list[Section]:
    """The idea, then the method and its settings."""
    method = latex_escape(idea.method or idea.title)
    return [
        Section(
            "Idea",
            f"\\textbf{{{latex_escape(idea.title)}.}} "
            f"{latex_escape(idea.hypothesis or idea.abstract)}\n\nThe search ran in {latex_escape(run.mode)} "
            "mode; its best nodes and the aggregated results are reported below. Every number in this "
            "report comes from the run's artifacts (results.tex).",
        ),
        Section(
            "Method and settings",
            f"\\textbf{{Method.}} {method}"
            + (f": {latex_escape(idea.method_description)}." if idea.method_description else ".")
            + "\n\n"
            + settings_text(idea, macros),
        ),
    ]


def _results(idea: IdeaResults, macros: ResultsMacros, figures: list[Figure]) -> str:
    """The figures (the template's first, in their order), the headline and the tests table."""
    figs = {f.name: f for f in figures}
    results, table = "", tests_table(idea, macros)
    if "fig_stages.png" in figs and "fig_main.png" in figs:
        # No table when no group has two runs to test (one seed): then no sentence names it either
        tested = table and "Table~\\ref{tab:tests} tests each stage's subject against the other groups; "
        results += (
            "Figure~\\ref{fig:fig_stages} summarises the stages and Figure~\\ref{fig:fig_main} the headline "
            f"comparison. {tested}Appendix~\\ref{{sec:per-stage-results}} lists every group's values.\n\n"
        )
    ordered = sorted(
        figs.values(),
        key=lambda f: (
            f.name not in TEMPLATE_CAPTIONS,
            list(TEMPLATE_CAPTIONS).index(f.name) if f.name in TEMPLATE_CAPTIONS else 0,
            f.name,
        ),
    )
    for fig in ordered:
        results += figure_env(
            fig, TEMPLATE_CAPTIONS.get(fig.name, "A figure drawn from the run's aggregated results.")
        )
    if macros.main is not None:
        results += (
            "\\textbf{Headline.} "
            + claim_sentence(macros.main, macros, "Main")
            + " "
            + headline_caveats(macros.main, macros)
            + "\n\n"
            + findings_text(macros)
        )
    return results + table


def _heldout(idea: IdeaResults, macros: ResultsMacros) -> list[Section]:
    if not (idea.heldout and "HeldoutValue" in macros.macros):
        return []
    return [
        Section(
            "Held-out evaluation",
            "The final node was chosen on held-out data the search never "
            f"saw: held-out {latex_escape(idea.primary.name)} \\HeldoutValue{{}}"
            + (
                " against \\HeldoutSearchValue{} during the search."
                if "HeldoutSearchValue" in macros.macros
                else "."
            ),
        )
    ]


LIMITATIONS = Section(
    "Limitations",
    "This is an automated results report, not a paper: it makes no claim beyond "
    "the run's own experiments, the seeds are few, and significance tests on so few seeds have "
    "little power. Read the effect sizes with their standard deviations.",
)


def report(
    run: RunResults, idea: IdeaResults, macros: ResultsMacros, figures: list[Figure], template: str
) -> str:
    sections = [
        *_opening(run, idea, macros),
        Section("Results", _results(idea, macros, figures)),
        Section("Search tree", search_table(idea, macros)),
        *_heldout(idea, macros),
        LIMITATIONS,
    ]
    tables = "".join(stage_table(idea, macros, si) for si, stage in enumerate(idea.stages) if stage.groups)
    tex = render_paper(
        template=template,
        title=latex_escape(idea.title),
        author="Silva \\textperiodcentered{} automated results report",
        abstract=abstract(run, idea, macros),
        sections=sections,
        cite=False,
        appendix=[Section("Per-stage results", tables)],
    )
    if template == "conference":  # two columns: tables and figures span both
        for env in ("table", "figure"):
            tex = tex.replace(f"\\begin{{{env}}}", f"\\begin{{{env}*}}").replace(
                f"\\end{{{env}}}", f"\\end{{{env}*}}"
            )
    return tex
