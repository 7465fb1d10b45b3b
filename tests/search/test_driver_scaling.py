"""The driver's cost per completion stays flat (docs/engine.md, "Driver scaling"): a forest asks
only trees that can propose, a proposer keeps its tried set as the stage grows, and a stage
whose candidate pool is exhausted closes instead of stopping the run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from engine.dispatch import Dispatcher
from engine.journal import Journal
from engine.node import Node
from search.stages import StageNodes
from search.template.forest import build_template_forest
from search.template.proposers import POOL_SIZE, Proposer, Tried, canonical
from search.template.spec import Param, Template
from silva import lifecycle
from silva.config import load_config
from tests.budgets.support import VirtualExecutor, forest_config
from tests.helpers import make_config, make_template


def test_a_completion_asks_only_the_tree_it_belongs_to(tmp_path: Path) -> None:
    """Eight template ideas on 1,000 slots cannot fill them: every completion frees a slot that
    the dispatcher offers the forest. Only the tree whose result came back is asked (one
    proposal call at most per completion), not all eight each time."""
    cfg = load_config(forest_config(tmp_path, n=8, executor={"kind": "inprocess", "max_in_flight": 1000}))
    assert cfg.template is not None
    _, journal = lifecycle.create_run(cfg)
    forest = build_template_forest(cfg, journal, Template.load(cfg.template), cfg.variants, cfg.allocation)
    executor = VirtualExecutor()
    outcome = Dispatcher(cfg, journal, forest, executor).run()
    assert outcome.status == "finished" and outcome.message.count("all four stages complete") == 8
    completions = len(executor.submitted)
    assert completions == len(journal.nodes) > 8 * 8
    # The first round asks each tree once; the last, with nothing in flight, once more.
    assert forest.asked <= completions + 2 * 8
    assert forest.asked < 2 * completions  # one call per open tree per completion would be ~8x


def test_a_stage_that_tried_every_setting_closes_and_the_run_goes_on(tmp_path: Path) -> None:
    """Six settings in the space, twenty nodes in the tuning stage: the stage closes with the
    pool's reason once all are tried, and the next stages run (it used to stop as "stuck")."""
    space = {
        "x": {"type": "choice", "values": [0.1, 0.3, 0.5], "default": 0.5},
        "y": {"type": "choice", "values": [0, 1], "default": 1},
    }
    cfg = load_config(
        make_config(
            tmp_path,
            make_template(tmp_path / "tpl", hyperparameters=space),
            stages={"hyperparameter": {"max_nodes": 20}},
            proposer="sobol",
        )
    )
    _, journal = lifecycle.create_run(cfg)
    outcome = lifecycle.execute(cfg, journal, executor=VirtualExecutor())
    assert outcome.status == "finished" and outcome.message == "all four stages complete"
    tuned = journal.in_stage("hyperparameter", "hyperparameter")
    assert len(tuned) == 5  # the other five settings; the baseline's is its root
    assert len({canonical({"x": n.params["x"], "y": n.params["y"]}) for n in tuned}) == 5
    reason = journal.stage_best[("default", "hyperparameter")].reason
    assert reason.startswith("candidate pool exhausted: every setting of")


def test_the_pool_grows_for_a_stage_larger_than_it() -> None:
    """A continuous space names more settings than the first pool holds: proposals go on past
    it, never repeating, the same for the same seed."""
    space = {
        "x": Param(type="float", low=0.0, high=1.0, default=0.5),
        "y": Param(type="float", low=0.0, high=1.0, default=0.5),
    }

    def grow(n: int) -> list[dict[str, float]]:
        p, tried, nodes = (
            Proposer(space, seed=3, kind="sobol"),
            Tried(sorted(space)),
            list[SimpleNamespace](),
        )
        while len(nodes) < n:
            for s in p.propose(64, [], [], tried.update(nodes)):
                nodes.append(SimpleNamespace(id=f"n{len(nodes)}", params=s))
        assert p.size > POOL_SIZE
        return [n.params for n in nodes]

    settings = grow(POOL_SIZE + 500)
    assert len({canonical(s) for s in settings}) == len(settings)
    assert settings == grow(POOL_SIZE + 500)


def test_the_tried_set_reads_only_new_nodes_and_rebuilds_after_a_discard() -> None:
    tried = Tried(["x"])
    nodes = [SimpleNamespace(id=f"n{k}", params={"x": k, "other": 0}) for k in range(5)]
    assert tried.update(nodes[:3]) == {canonical({"x": k}) for k in range(3)}
    assert tried.update(nodes) == {canonical({"x": k}) for k in range(5)} and tried.rebuilt == 0
    del nodes[1]  # a discarded node leaves its stage: its setting is free again
    assert tried.update(nodes) == {canonical({"x": k}) for k in (0, 2, 3, 4)} and tried.rebuilt == 1


def test_a_discard_rebuilds_only_its_own_stages_view(tmp_path: Path) -> None:
    """A forest holds a view per idea and stage: a discard in one idea's stage must not make
    every other idea's view rebuild (at 10,000 slots that was a rescan of every tree)."""
    journal = Journal.open(tmp_path)
    for idea in ("a", "b"):
        journal.add_node(Node(stage="s", kind="k", idea=idea))
        journal.add_node(Node(stage="s", kind="k", idea=idea))
    views = {idea: StageNodes(journal, idea, "s").refresh() for idea in ("a", "b")}
    dropped = views["a"].search[0].id
    journal.discard(dropped, "its premise failed")
    assert views["b"].refresh().generation == 0 and len(views["b"].search) == 2
    assert views["a"].refresh().generation == 1
    assert [n.id for n in views["a"].search] == [n.id for n in journal.in_stage("s", idea="a")]
    assert dropped not in views["a"].index and journal.discarded == [dropped]
