"""The agentic four-stage search end to end, with the offline scripted scientist."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine import events as ev
from engine.journal import Journal
from engine.llm.ledger import summarize
from engine.node import NodeStatus
from search.agentic.operators.outcome import operator_outcome as op
from search.template.plan import PLAN
from tests.search.agentic_helpers import LLM, ROOT, agentic_config, llm_nodes, providers, responder, start

STAGES = PLAN.names


def first_agenda_improve() -> object:
    """Blank figures for the first improve node of the agenda stage only (stateful, in-process)."""
    seen: list[str] = []
    lock = threading.Lock()

    def blank(op: str, stage: str, node: str) -> bool:
        with lock:
            if op == "improve" and stage == "agenda" and (not seen or seen[0] == node):
                seen.append(node)
                return True
            return False

    return blank


@pytest.mark.e2e
@pytest.mark.timeout(480)
def test_four_stages_with_bug_timeout_and_rejected_plots(tmp_path: Path) -> None:
    cfg = agentic_config(
        tmp_path,
        search={"num_drafts": 2, "debug_prob": 1.0, "max_debug_depth": 2},
        # The stage's decision waits for the draft that times out. The node timeout also bounds
        # each experiment and plot script (0.7 CPU-s to import matplotlib with the font cache that
        # sandbox: none copies in, 14 s at load 40 on 2 cores): 30 s holds at load 10.
        budgets={"node_timeout_s": 30},
        # No proposal ahead of a free slot: a third draft made ahead could be the stage's first good
        # node, before the debug step this test follows.
        executor={"kind": "inprocess", "max_in_flight": 2, "lookahead": 0},
        # Two slots and four agenda nodes: by the fourth, the rejected node is in and gets its debug.
        stages={"agenda": {"max_nodes": 4}},
    )
    fn = responder(bugs={"n0000": "name_error", "n0001": "timeout"}, blank_plots=first_agenda_improve())
    outcome, j = start(cfg, fn)
    assert outcome.status == "finished" and outcome.message == "all four stages complete"

    # Stage 1: a draft with a bug and a draft that times out; a debug step fixes one of them.
    bug, slow = j.nodes["n0000"], j.nodes["n0001"]
    assert bug.status == NodeStatus.BUGGY and "NameError" in bug.reason and op(bug).status_rule == "execution"
    assert slow.status == NodeStatus.BUGGY and "timed out after 30 s" in slow.reason
    assert slow.execution is not None and slow.execution.timed_out
    prelim_best = j.nodes[j.stage_ended[("noise", "preliminary")].best_node_id or ""]
    assert prelim_best.kind == "debug" and prelim_best.parent_id in ("n0000", "n0001")
    assert prelim_best.status == NodeStatus.GOOD and "sleep(3600" not in prelim_best.code
    assert j.stage_ended[("noise", "preliminary")].reason.startswith(f"first good node {prelim_best.id}")

    # Stage 3: figures rejected by the vision critique make a buggy node; a debug fixes the plot.
    rejected = [n for n in j.in_stage("agenda") if op(n).status_rule == "plots"]
    assert len(rejected) == 1 and "plots rejected by the critique" in rejected[0].reason
    assert op(rejected[0]).plot_critique.acceptable is False  # type: ignore[union-attr]
    fixes = [n for n in j.children(rejected[0].id) if n.kind == "debug"]
    assert fixes and fixes[0].status == NodeStatus.GOOD and op(fixes[0]).plot_critique.acceptable is True  # type: ignore[union-attr]

    # Every stage: one decision, replicates over seeds, an aggregate, promotion to the next root.
    for i, stage in enumerate(STAGES):
        ended = j.stage_ended[("noise", stage)]
        best = j.nodes[ended.best_node_id or ""]
        searched = [n for n in j.in_stage(stage) if n.kind not in ("replication", "aggregation", "selection")]
        good = [n for n in searched if n.status == NodeStatus.GOOD]
        decision = j.stage_best[("noise", stage)]
        # The LLM is asked (once, recorded) only when there is a choice to make: among the good
        # nodes in when the stage was decided (not those whose judgement it did not wait for).
        unwaited = re.search(r"not waiting for the judgement of ([n0-9, ]+):", decision.reason)
        known = [n for n in good if not unwaited or n.id not in unwaited.group(1).split(", ")]
        assert (decision.selection is not None) == (len(known) > 1)
        if decision.selection is not None:
            assert decision.selection["by"].startswith("metric") and decision.selection["llm_reason"]
        assert best.metric("val_accuracy") == max(n.metric("val_accuracy") for n in good)  # type: ignore[type-var]
        reps = [n for n in j.in_stage(stage, "replication") if n.parent_id == best.id]
        assert sorted(r.seed for r in reps) == [1, 2] and all(r.code == best.code for r in reps)  # type: ignore[type-var]
        agg = j.nodes[ended.aggregate_node_id or ""]
        assert agg.status == NodeStatus.GOOD and agg.refs == [best.id, *[r.id for r in reps]]
        if i:
            root = j.stage_ended[("noise", STAGES[i - 1])].best_node_id
            first = [n for n in j.in_stage(stage) if n.kind not in ("replication", "aggregation")][0]
            assert first.parent_id == root
        assert len(searched) <= cfg.stages[stage].max_nodes

    # Hyperparameter settings and ablations are never repeated.
    settings = [
        json.dumps(op(n).hyperparameters, sort_keys=True)
        for n in j.in_stage("hyperparameter", "hyperparameter")
        if op(n).hyperparameters
    ]
    assert settings and len(settings) == len(set(settings))
    ablations = [op(n).ablation for n in j.in_stage("ablation", "ablation")]
    assert ablations and len(ablations) == len(set(ablations))
    assert all(op(n).code_change == "diff_failed_whole_file" for n in j.in_stage("ablation", "ablation"))
    assert any(op(n).code_change == "diff" for n in j.in_stage("hyperparameter", "hyperparameter"))

    # Every LLM node: code and plan from the LLM, a judgement with its reason, at most three
    # calls (proposal, judgement, critique) plus the bounded re-asks of a rejected proposal.
    for n in llm_nodes(j):
        assert n.code and not n.plan.startswith(n.kind), n.id
        assert op(n).judgement.reason and op(n).llm_calls <= 3 + cfg.llm.max_reasks, n.id  # type: ignore[union-attr]
        if n.status == NodeStatus.GOOD:
            assert op(n).plots and op(n).plot_critique.acceptable is True  # type: ignore[union-attr]
            assert n.metric("val_accuracy") is not None
    ledger = summarize(j.log.path.parent)
    assert ledger["run"]["errors"] == 0
    assert set(ledger["by_role"]) == {"code", "feedback", "vision", "selection"}

    # The experimental journal carries the numbers of the results artifacts.
    notes = json.loads((j.log.path.parent / "notes" / "noise" / "notes.json").read_text())
    assert list(notes["stages"]) == list(STAGES)
    for s in notes["stages"].values():
        assert s["best_value"] == j.nodes[s["best_node"]].metric("val_accuracy")
        assert s["aggregate"] and s["tried"]
    assert "## ablation" in (j.log.path.parent / "notes" / "noise" / "journal.md").read_text()


def test_preliminary_without_good_node_stops_with_reason(tmp_path: Path) -> None:
    cfg = agentic_config(tmp_path, stages={"preliminary": {"max_nodes": 2}}, search={"max_debug_depth": 0})
    outcome, j = start(cfg, responder(bugs={"n0000": "name_error", "n0001": "name_error"}, plots=False))
    assert outcome.status == "finished"
    assert (
        outcome.message
        == "stopped: stage preliminary found no good node in 2 node(s) (node budget of 2 used)"
    )
    assert len(j.nodes) == 2 and ("noise", "hyperparameter") not in j.stage_started


@pytest.mark.e2e
@pytest.mark.parametrize("policy", ["best_first", "greedy", "mcts", "evolutionary"])
def test_every_policy_runs(tmp_path: Path, policy: str) -> None:
    cfg = agentic_config(
        tmp_path,
        replicates=1,
        search={"policy": policy, "num_drafts": 2, "crossover_rate": 1.0},
        stages={
            "preliminary": {"max_nodes": 3},
            "hyperparameter": {"max_nodes": 3},
            "agenda": {"max_nodes": 4},
            "ablation": {"max_nodes": 2},
        },
    )
    outcome, j = start(cfg, responder(bugs={"n0000": "name_error"}, plots=False))
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    searched = llm_nodes(j)
    assert all(n.origin.policy == policy for n in searched)
    for stage in STAGES:
        assert len([n for n in searched if n.stage == stage]) <= cfg.stages[stage].max_nodes
    if policy == "evolutionary":
        assert {n.origin.island for n in searched} == {0, 1}
        crossed = [n for n in searched if n.kind == "crossover"]
        assert all(len(n.refs) == 1 and n.refs[0] != n.parent_id for n in crossed)


@pytest.mark.e2e
def test_node_and_dollar_budgets_hold(tmp_path: Path) -> None:
    cfg = agentic_config(tmp_path / "nodes", budgets={"max_nodes": 7})
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "budget" and outcome.budget == "max_nodes"
    assert len(j.nodes) == 7 and all(n.is_finished for n in j)

    llm = copy.deepcopy(LLM)
    llm["models"]["sci"]["price"] = {"input": 100.0, "output": 100.0}  # about $0.3 a call
    cfg = agentic_config(tmp_path / "dollars", llm=llm, budgets={"dollars": 2.0})
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "budget" and outcome.budget == "dollars"
    spent = summarize(j.log.path.parent)["run"]["dollars"]
    # Stopped at the limit; calls already in flight may finish: at most about one each over.
    assert cfg.executor.max_in_flight is not None and 2.0 <= spent < 2.0 + cfg.executor.max_in_flight * 1.0
    assert j.stop is not None and j.stop.budget == "dollars"
    assert all(n.status != NodeStatus.RUNNING for n in j)  # in-flight nodes wait for a resume


@pytest.mark.e2e
def test_resume_mid_stage_continues_the_same_tree(tmp_path: Path) -> None:
    from silva import lifecycle as run

    cfg = agentic_config(tmp_path, replicates=1, search={"policy": "mcts"})
    fn = responder(plots=False)
    run_dir, journal = run.create_run(cfg)

    def interrupt_in_stage_2(j: Journal) -> None:
        # A speculative tuning may finish before the stage starts: wait for the stage itself.
        started = ("noise", "hyperparameter") in j.stage_started
        if started and sum(n.is_finished for n in j.in_stage("hyperparameter", "hyperparameter")) >= 1:
            raise KeyboardInterrupt  # what Ctrl-C (or a killed driver) does to the dispatcher

    outcome = run.execute(cfg, journal, on_change=interrupt_in_stage_2, providers=providers(fn))
    assert outcome.status == "interrupted"
    before = Journal.open(run_dir)
    done_before = {n.id: n.attempts for n in before if n.is_finished}
    cancelled = [n.id for n in before if not n.is_finished]
    assert ("noise", "hyperparameter") in before.stage_started and (
        "noise",
        "hyperparameter",
    ) not in before.stage_ended

    # Resume as `silva resume` does (open the run from its directory), with the same provider.
    cfg2, journal2 = run.open_run(run_dir)
    outcome = run.execute(cfg2, journal2, providers=providers(fn))
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    after = Journal.open(run_dir)
    assert all(after.nodes[i].attempts == a for i, a in done_before.items())  # never re-run
    assert cancelled and all(after.nodes[i].is_finished and after.nodes[i].attempts == 2 for i in cancelled)
    starts = [e for e in after.log.read(ev.StageStarted) if e.stage == "hyperparameter"]
    assert len(starts) == 1  # the stage went on; it did not start over
    root = after.stage_ended[("noise", "preliminary")].best_node_id
    stage2 = [n for n in after.in_stage("hyperparameter", "hyperparameter", "debug")]
    assert all(n.parent_id == root or after.nodes[n.parent_id].stage == "hyperparameter" for n in stage2)  # type: ignore[index]
    assert len(stage2) <= cfg.stages["hyperparameter"].max_nodes
    assert [e.type for e in after.log.events].count("session_started") == 2


@pytest.mark.e2e
def test_tuning_ends_when_the_llm_judges_it_converged(tmp_path: Path) -> None:
    cfg = agentic_config(
        tmp_path,
        replicates=1,
        search={"min_tuning_nodes": 2},
        stages={"hyperparameter": {"max_nodes": 8}, "agenda": {"max_nodes": 1}, "ablation": {"max_nodes": 1}},
        executor={"kind": "inprocess", "max_in_flight": 2},
    )
    outcome, j = start(cfg, responder(plots=False))  # judges "converged" once 3 settings are in
    assert outcome.status == "finished"
    ended = j.stage_ended[("noise", "hyperparameter")].reason
    tuned = j.in_stage("hyperparameter", "hyperparameter")
    assert ended.startswith("LLM judged tuning converged at n") and len(tuned) < 8
    converged = [n for n in tuned if op(n).judgement.converged]  # type: ignore[union-attr]
    assert converged and all(op(n).judgement.converged is False for n in tuned if n not in converged)  # type: ignore[union-attr]


def ablation_run(tmp_path: Path, lookahead: int) -> Journal:
    cfg = agentic_config(
        tmp_path,
        replicates=1,
        stages={"hyperparameter": {"max_nodes": 1}, "agenda": {"max_nodes": 1}, "ablation": {"max_nodes": 8}},
        executor={"kind": "inprocess", "max_in_flight": 1, "lookahead": lookahead},
    )
    outcome, j = start(cfg, responder(plots=False))
    assert outcome.status == "finished"
    ablations = j.in_stage("ablation", "ablation")
    assert {op(n).ablation for n in ablations if n.status.value == "good"} == {
        "no_standardize",
        "random_filter",
        "no_filtering",
    }
    return j


@pytest.mark.e2e
def test_ablation_stage_ends_when_the_model_has_no_new_ablation(tmp_path: Path) -> None:
    # The scripted scientist knows three ablations; a stage budget of eight would otherwise pay
    # three re-asks for each of five proposals that can only repeat one. No proposal thinks ahead
    # here (look-ahead, derived from measured times, may be above 0 on a loaded host): one at a time.
    j = ablation_run(tmp_path, lookahead=0)
    ablations = j.in_stage("ablation", "ablation")
    spent = [n for n in ablations if op(n).exhausted]
    assert len(spent) == 1 and len(ablations) == 4  # the fourth named a listed one: the search ended there
    assert j.stage_ended[("noise", "ablation")].reason.startswith(f"no new ablation left: at {spent[0].id}")


@pytest.mark.e2e
def test_ablations_proposed_ahead_run_when_a_later_proposal_has_none_left(tmp_path: Path) -> None:
    """With look-ahead every ablation may be proposed before one runs; a later proposal, shown them
    as tried, names none: the stage ends, and the proposals waiting for the slot still run (they
    were discarded, and the stage ran none of its three)."""
    j = ablation_run(tmp_path, lookahead=5)
    spent = [n for n in j.in_stage("ablation", "ablation") if op(n).exhausted]
    assert spent and j.stage_ended[("noise", "ablation")].reason.startswith("no new ablation left")


@pytest.mark.e2e
def test_a_fresh_process_reads_every_outcome_typed(tmp_path: Path) -> None:
    """`silva resume` and `silva status` replay the journal in a new process: the node outcomes and
    steps of an agentic run must come back as their own types, not as UnknownOutcome (a resumed
    node's judge step asserted on that)."""
    cfg = agentic_config(tmp_path, budgets={"wall_clock_s": 300, "node_timeout_s": 30, "max_nodes": 3})
    _, journal = start(cfg, responder())
    check = (
        "import sys; from pathlib import Path; from silva.lifecycle import open_run; "
        "from engine.outcome import UnknownOutcome; _, j = open_run(Path(sys.argv[1]), read_only=True); "
        "values = [v for n in j for v in (n.outcome, *n.steps.values()) if v is not None]; "
        "bad = [type(v).__name__ for v in values if isinstance(v, UnknownOutcome)]; "
        "print(len(values), bad); sys.exit(1 if bad or not values else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check, str(journal.log.path.parent)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
