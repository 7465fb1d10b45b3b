"""The claim ledger and the offline writer's sentences: one verdict rule, the hypothesis as the
headline, groups of one never tested, repeats named, unmatched budgets and the selection metric said.

The idea below has the shape of Silva's label-noise example run (its old abstract said an ablation
"outperformed" the method at Welch p = 0.874) and of the digits example (an ablation's settings
shown as the final node's, a repeat of the baseline comparison, an n = 1 group printed "± 0.000")."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from engine.claims import verdict
from engine.claimtext import check_text, plain
from engine.node import MetricSpec
from writeup.claim_sentences import contradictions, remove_contradictions
from writeup.figures import Figure, figure_data
from writeup.ledger import build_ledger
from writeup.llm_writer import ledger_lines
from writeup.offline import abstract, called, report, settings_text
from writeup.results import ResultsMacros, build_macros
from writeup.run_reader import GroupStats, IdeaResults, RunResults, StageResult

TUNED = {"val_accuracy": [0.84, 0.90, 0.852], "test_accuracy": [0.962, 0.958, 0.966]}
METHOD = {"val_accuracy": [0.81, 0.90, 0.866], "test_accuracy": [0.891, 0.885, 0.896]}
BASE = {"val_accuracy": [0.86, 0.87, 0.85], "test_accuracy": [0.960, 0.964, 0.968]}
ONE = {"val_accuracy": [0.196], "test_accuracy": [0.211]}


def _groups(groups: dict[str, dict[str, list[float]]], metrics: set[str]) -> dict[str, dict[str, GroupStats]]:
    return {
        label: {
            m: GroupStats(
                mean=statistics.fmean(v), std=statistics.stdev(v) if len(v) > 1 else 0.0, n=len(v), values=v
            )
            for m, v in per.items()
            if m in metrics
        }
        for label, per in groups.items()
    }


def idea(with_test_metric: bool) -> IdeaResults:
    metrics = [MetricSpec(name="val_accuracy", direction="maximize", primary=True)]
    if with_test_metric:
        metrics.append(MetricSpec(name="test_accuracy", direction="maximize"))
    names = {m.name for m in metrics}
    stage_groups = {
        "preliminary": {"baseline (best of preliminary)": BASE},
        "hyperparameter": {
            "tuned baseline (best of hyperparameter)": TUNED,
            "baseline (best of preliminary)": BASE,
        },
        "agenda": {"method (best of agenda)": METHOD, "tuned baseline (best of hyperparameter)": TUNED},
        "ablation": {
            "ablation: no_method (best of ablation)": TUNED,  # the ablation re-runs the tuned baseline
            "method (best of agenda)": METHOD,
            "ablation: no_scaling": ONE,
        },
    }
    budgets = {"preliminary": 1, "hyperparameter": 8, "agenda": 4, "ablation": 2}
    params = {"agenda": {"use_method": True, "C": 0.12}, "ablation": {"use_method": False, "C": 0.12}}
    return IdeaResults(
        name="toy",
        title="Toy",
        hypothesis="The method raises accuracy over the tuned baseline.",
        metrics=metrics,
        stages=[
            StageResult(
                stage=s,
                groups=_groups(g, names),
                search_nodes=budgets[s],
                nodes=budgets[s] + 4,
                best_node_id=f"n{i}",
                best_params=params.get(s, {}),
            )
            for i, (s, g) in enumerate(stage_groups.items())
        ],
    )


def _run(i: IdeaResults) -> RunResults:
    return RunResults(run_dir=".", name="toy", mode="template", replicates=3, ideas={i.name: i})


def test_one_verdict_rule() -> None:
    assert verdict(0.01, 0.874, "maximize") == "no detectable difference"
    assert verdict(0.01, 0.01, "maximize") == "better"
    assert verdict(0.01, 0.01, "minimize") == "worse"
    assert verdict(-0.01, 0.01, "minimize") == "better"
    assert verdict(0.5, None, "maximize") == "untested"
    assert verdict(0.01, 0.04, "maximize", alpha=0.01) == "no detectable difference"


def test_headline_is_the_hypothesis_on_the_selection_metric_said_so() -> None:
    i = idea(with_test_metric=False)
    ledger = build_ledger(i)
    main = ledger.headline
    assert main is not None
    # The method against the tuned baseline, not the ablation stage's comparison.
    assert (main.subject.label, main.reference.label) == (
        "method (best of agenda)",
        "tuned baseline (best of hyperparameter)",
    )
    assert main.role == "selection" and "selection metric" in ledger.headline_note
    assert main.p is not None and main.p > 0.5 and main.verdict == "no detectable difference"
    assert main.diff_ci is not None and main.diff_ci[0] < 0 < main.diff_ci[1]
    assert main.budgets_matched is False and (main.subject.budget_nodes, main.reference.budget_nodes) == (
        4,
        8,
    )
    text = abstract(_run(i), i, build_macros(_run(i), i, ledger))
    assert "outperform" not in text and "no detectable difference" in text
    assert "\\MainDiffLo" in text and f"\\claim{{{main.id}}}" in text
    assert "search selected on" in text and "budgets were not matched" in text


def test_groups_of_one_are_never_tested_and_repeats_are_named() -> None:
    i = idea(with_test_metric=False)
    ledger = build_ledger(i)
    single = next(c for c in ledger.claims if c.reference.label == "ablation: no_scaling")
    assert single.reference.sd is None and single.test is None and single.verdict == "untested"
    repeat = next(c for c in ledger.claims if c.subject.label.startswith("ablation: no_method"))
    assert repeat.same_runs_as == ledger.headline_id
    macros = build_macros(_run(i), i, ledger)
    assert "AblationCValAccuracySd" not in macros.macros  # no "± 0.000" for one run
    tex = report(_run(i), i, macros, [], "workshop")
    assert "\\AblationCValAccuracySd" not in tex and "\\AblationCValAccuracyMean{} (one run)" in tex
    assert f"repeats the runs of claim \\texttt{{{ledger.headline_id}}}" in tex
    assert "outperform" not in tex


def test_held_out_test_metric_is_the_headline_and_settings_are_the_methods() -> None:
    i = idea(with_test_metric=True)
    ledger = build_ledger(i)
    main = ledger.headline
    assert main is not None and main.metric == "test_accuracy" and main.role == "test"
    assert main.verdict == "worse" and main.p is not None and main.p < 0.05
    assert main.effect is not None and main.effect_ci is not None and main.effect_ci[1] < 0
    macros = build_macros(_run(i), i, ledger)
    text = abstract(_run(i), i, macros)
    assert "significantly worse than" in text and "(held-out test)" in text
    settings = settings_text(i, macros)
    assert "method (best of agenda)" in settings and "use\\_method} & \\texttt{True}" in settings


@pytest.mark.parametrize("test", ["welch", "student", "mannwhitney"])
def test_every_test_gives_a_verdict(test: str) -> None:
    ledger = build_ledger(idea(with_test_metric=True), test=test)
    assert all(c.verdict != "untested" for c in ledger.claims if min(c.subject.n, c.reference.n) >= 2)


def test_offline_report_contradicts_no_claim_and_a_wrong_sentence_is_found_and_removed() -> None:
    i = idea(with_test_metric=True)
    macros = build_macros(_run(i), i, build_ledger(i))
    tex = report(_run(i), i, macros, [], "workshop")
    assert contradictions(tex, macros) == []
    main = macros.main
    assert main is not None and main.verdict == "worse"
    false = f"The method significantly outperforms the baseline on test\\_accuracy.\\claim{{{main.id}}}"
    planted = tex.replace("\\section{Limitations}", "\\section{Limitations}\n" + false + " Seeds are few.")
    (found,) = contradictions(planted, macros)
    assert (
        found.claim_id == main.id and "states 'better' but the claim's verdict is 'worse'" in found.problems
    )
    assert "contradicts claim" in found.issue() and "significantly outperforms" in found.issue()
    cleaned = remove_contradictions(planted, [found])
    assert "outperforms" not in cleaned and "Seeds are few." in cleaned


def test_agentic_groups_get_readable_names_from_what_they_are() -> None:
    # Agentic stage bests are labelled by node and tuning; the ledger names them for readers.
    i = idea(with_test_metric=False)
    relabel = {
        "baseline (best of preliminary)": "draft n0000 (best of preliminary)",
        "tuned baseline (best of hyperparameter)": "tuned: lr=0.1 (best of hyperparameter)",
        "method (best of agenda)": "improve n0020 (best of agenda)",
    }
    for stage in i.stages:
        stage.groups = {relabel.get(k, k): v for k, v in stage.groups.items()}
    i.method = "Small-loss filtering for linear classifiers"
    names = {g.label: g.name for c in build_ledger(i).claims for g in (c.subject, c.reference)}
    assert names == {
        "draft n0000 (best of preliminary)": "baseline",
        "tuned: lr=0.1 (best of hyperparameter)": "tuned baseline",
        "improve n0020 (best of agenda)": "Small-loss filtering",
        "ablation: no_method (best of ablation)": "no method ablation",
        "ablation: no_scaling": "no scaling ablation",
    }


def _agentic() -> tuple[IdeaResults, ResultsMacros]:
    """The toy idea with the labels an agentic run gives its stage bests."""
    i = idea(with_test_metric=True)
    relabel = {
        "baseline (best of preliminary)": "draft n0000 (best of preliminary)",
        "tuned baseline (best of hyperparameter)": "tuned: lr=0.1 (best of hyperparameter)",
        "method (best of agenda)": "improve n0020 (best of agenda)",
    }
    for stage in i.stages:
        stage.groups = {relabel.get(k, k): v for k, v in stage.groups.items()}
    i.method = "Small-loss filtering for linear classifiers"
    return i, build_macros(_run(i), i, build_ledger(i))


def test_agentic_report_names_groups_by_name_and_tables_keep_the_label() -> None:
    i, macros = _agentic()
    tex = report(_run(i), i, macros, [], "workshop")
    prose = plain(tex.split("\\appendix")[0], {m.name: m.plain for m in macros.macros.values()})
    assert "Small-loss filtering was significantly worse than the tuned baseline" in prose
    assert "n0020" not in prose.replace("Small-loss filtering (improve n0020 (best of agenda))", "")
    assert "lr=0.1" not in prose
    # A table row gives the label beside the name, so a reader can find the node.
    (row,) = [line for line in tex.splitlines() if "\\AgendaGroupALabel" in line]
    assert row.startswith("\\AgendaGroupA{}") and row.endswith("\\\\")
    assert macros.macros["AgendaGroupALabel"].plain == "improve n0020 (best of agenda)"
    assert contradictions(tex, macros) == []
    # The reviewer reads "baseline (draft n0000 ...)" in a table as one group, not a pair of them.
    whole = plain(tex, {m.name: m.plain for m in macros.macros.values()})
    assert [c for c in check_text(whole, macros.ledger) if c.problems] == []


def test_the_llm_writer_is_given_each_groups_name_beside_its_label() -> None:
    _, macros = _agentic()
    lines = ledger_lines(macros)
    assert (
        "'Small-loss filtering' (label 'improve n0020 (best of agenda)') vs 'tuned baseline' (label " in lines
    )
    assert "'no scaling ablation' (label 'ablation: no_scaling')" in lines


def test_figures_label_groups_by_name() -> None:
    i, macros = _agentic()
    names = figure_data(i, macros)["names"]
    assert isinstance(names, dict) and names["improve n0020 (best of agenda)"] == "Small-loss filtering"


def test_figures_name_groups_as_the_papers_ledger_does() -> None:
    """A ledger read back (ledger.json) keeps the names the paper was checked with: the figures
    use them too, not names made again from the labels."""
    i = _agentic()[0]
    ledger = build_ledger(i)
    for c in ledger.claims:
        for g in (c.subject, c.reference):
            if g.label == "improve n0020 (best of agenda)":
                g.name = "SLF"
    macros = build_macros(_run(i), i, ledger)
    data = figure_data(i, macros)
    names = data["names"]
    assert isinstance(names, dict) and names["improve n0020 (best of agenda)"] == "SLF"
    assert names["tuned: lr=0.1 (best of hyperparameter)"] == macros.name(
        "tuned: lr=0.1 (best of hyperparameter)"
    )
    assert data["main_stage"] == (macros.main.stage if macros.main else None)


def test_prose_puts_an_article_before_silvas_names_only() -> None:
    _, macros = _agentic()
    main = macros.main
    assert main is not None
    assert (called(macros, main.subject), called(macros, main.reference)) == (
        "Small-loss filtering",
        "the tuned baseline",
    )
    macros.names[main.subject.label] = "random Fourier features"  # a method's name, lower case
    assert called(macros, main.subject) == "random Fourier features"


def test_a_report_of_one_seed_names_no_tests_table_it_lacks() -> None:
    i = idea(with_test_metric=False)  # every group one run, as with `replicates: 1`: nothing to test
    for stage in i.stages:
        for per in stage.groups.values():
            for m, g in per.items():
                per[m] = GroupStats(mean=g.mean, std=0.0, n=1, values=g.values[:1])
    macros = build_macros(_run(i), i, build_ledger(i))
    figures = [Figure(name=n, path=Path(n)) for n in ("fig_stages.png", "fig_main.png")]
    tex = report(_run(i), i, macros, figures, "workshop")
    assert "\\label{tab:tests}" not in tex and "\\ref{tab:tests}" not in tex  # was a "Table ??"
    assert "Appendix~\\ref{sec:per-stage-results}" in tex
    both = report(_run(idea(with_test_metric=False)), *_with_macros(), figures, "workshop")
    assert "\\label{tab:tests}" in both and "\\ref{tab:tests}" in both


def _with_macros() -> tuple[IdeaResults, ResultsMacros]:
    i = idea(with_test_metric=False)
    return i, build_macros(_run(i), i, build_ledger(i))
