"""The offline writer: a results report from templates, no LLM. Every number it prints is a
results.tex macro, so the number checker holds by construction and the PDF shows the run's values."""

from __future__ import annotations

from writeup.figures import Figure
from writeup.latex import Section, render_paper
from writeup.results import ResultsMacros, camel, latex_escape
from writeup.run_reader import IdeaResults, RunResults


def _m(macros: ResultsMacros, name: str) -> str:
    return f"\\{name}{{}}" if name in macros.macros else "--"


def _meansd(macros: ResultsMacros, base: str) -> str:
    if base + "Mean" not in macros.macros:
        return "--"
    return f"\\pmsd{{\\{base}Mean}}{{\\{base}Sd}}"


def abstract(run: RunResults, idea: IdeaResults, macros: ResultsMacros) -> str:
    text = (
        "This report was written by Silva from the artifacts of the run "
        f"\\texttt{{{latex_escape(run.name)}}}. "
    )
    if idea.hypothesis:
        text += (
            "It tests the hypothesis that "
            f"{latex_escape(idea.hypothesis.rstrip('.').removeprefix('Hypothesis: '))}. "
        )
    text += (
        "The search grew \\RunNodes{} experiment nodes (\\RunBuggyNodes{} of them failed) over \\RunStages{} "
        "stages, and replicated each stage's best node over \\RunSeeds{} seeds. "
    )
    main = macros.main
    if main is not None:
        better = (
            (main.effect or 0) > 0
            if idea.primary.direction == "maximize" or idea.primary.name != main.metric
            else (main.effect or 0) < 0
        )
        verdict = "outperformed" if better else "did not outperform"
        text += (
            f"On {latex_escape(main.metric)}, {latex_escape(main.subject)} {verdict} "
            f"{latex_escape(main.reference)}: \\MainMethodMean{{}}\\,$\\pm$\\,\\MainMethodSd{{}} against "
            "\\MainBaselineMean{}\\,$\\pm$\\,\\MainBaselineSd{} (mean\\,$\\pm$\\,sd over \\MainN{} "
            "seeds"
        )
        if "MainP" in macros.macros:
            text += f"; {_test_name(main.test)} $p=\\MainP{{}}$"
        if "MainG" in macros.macros:
            text += ", Hedges' $g=\\MainG{}$"
        text += ")."
    return text


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
    for gi, per_metric in enumerate(stage.groups.values()):
        g = chr(ord("A") + gi)
        cells = [_meansd(macros, f"{st}{g}{camel(m)}") if m in per_metric else "--" for m in metrics]
        n = _m(macros, f"{st}{g}{camel(metrics[0])}N")
        rows.append(f"\\{st}Group{g}{{}} & {n} & " + " & ".join(cells) + " \\\\")
    cols = "l" + "c" * (len(metrics) + 1)
    return (
        "\\begin{table}[!ht]\\centering\\footnotesize\n\\caption{Stage "
        f"\\emph{{{latex_escape(stage.stage)}}}: mean\\,$\\pm$\\,sd over seeds for each group of the stage's "
        f"aggregation.}}\\label{{tab:{st.lower()}}}\n\\begin{{tabular}}{{{cols}}}\\toprule\nGroup & $n$ & "
        f"{head} \\\\ \\midrule\n" + "\n".join(rows) + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
    )


def tests_table(idea: IdeaResults, macros: ResultsMacros) -> str:
    rows = []
    for stage in idea.stages:
        st, labels = camel(stage.stage), list(stage.groups)
        for gi in range(1, len(labels)):
            g = chr(ord("A") + gi)
            base = f"{st}AVs{g}{camel(idea.primary.name)}"
            if base + "G" not in macros.macros and base + "P" not in macros.macros:
                continue
            rows.append(
                f"\\{st}GroupA{{}} vs.\\ \\{st}Group{g}{{}} & {_m(macros, base + 'Stat')} & "
                f"{_m(macros, base + 'Df')} & {_m(macros, base + 'P')} & {_m(macros, base + 'G')} \\\\"
            )
    if not rows:
        return ""
    test = idea.stages and macros.comparisons[0].test if macros.comparisons else "welch"
    return (
        "\\begin{table}[ht]\\centering\\small\n\\caption{Each stage's subject against the other groups "
        f"of its aggregation on {latex_escape(idea.primary.name)}: {_test_name(str(test))} (statistic, "
        "degrees of freedom, two-sided $p$) and Hedges' $g$ (positive: the subject is "
        "higher).}\\label{tab:tests}\n\\begin{tabular}{lcccc}\\toprule\nComparison & statistic & df "
        "& $p$ & $g$ \\\\ \\midrule\n" + "\n".join(rows) + "\n\\bottomrule\\end{tabular}\n\\end{table}\n"
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


def settings_text(idea: IdeaResults) -> str:
    final = idea.final
    params = {**idea.fixed_settings, **(final.best_params if final else {})}
    if not params:
        return ""
    rows = "\n".join(
        f"\\texttt{{{latex_escape(k)}}} & \\texttt{{{latex_escape(_short(v))}}} \\\\"
        for k, v in params.items()
    )
    return (
        "The settings of the final best node:\n\n\\begin{center}\\small\\begin{tabular}{ll}\\toprule\n"
        "Setting & Value \\\\ \\midrule\n" + rows + "\n\\bottomrule\\end{tabular}\\end{center}\n"
    )


def _short(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)[:60]


def figure_env(fig: Figure, caption: str) -> str:
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


def report(
    run: RunResults, idea: IdeaResults, macros: ResultsMacros, figures: list[Figure], template: str
) -> str:
    figs = {f.name: f for f in figures}
    method = latex_escape(idea.method or idea.title)
    sections = [
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
            + settings_text(idea),
        ),
    ]
    results = ""
    if "fig_stages.png" in figs and "fig_main.png" in figs:
        results += (
            "Figure~\\ref{fig:fig_stages} summarises the stages and Figure~\\ref{fig:fig_main} the headline "
            "comparison. Table~\\ref{tab:tests} tests each stage's subject against the other groups; "
            "Appendix~\\ref{sec:per-stage-results} lists every group's values.\n\n"
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
    results += tests_table(idea, macros)
    sections.append(Section("Results", results))
    tables = "".join(stage_table(idea, macros, si) for si, stage in enumerate(idea.stages) if stage.groups)
    sections.append(Section("Search tree", search_table(idea, macros)))
    if idea.heldout and "HeldoutValue" in macros.macros:
        sections.append(
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
        )
    sections.append(
        Section(
            "Limitations",
            "This is an automated results report, not a paper: it makes no claim beyond "
            "the run's own experiments, the seeds are few, and significance tests on so few seeds have "
            "little power. Read the effect sizes with their standard deviations.",
        )
    )
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
