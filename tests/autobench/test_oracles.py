"""The oracles' rules, the cycle limit, the baselines and the scores."""

from __future__ import annotations

import pytest

from search.autobench import graphs
from search.autobench.agents import IdealAgent, RandomAgent, integrate
from search.autobench.envs import EnvSpec, Oracle
from search.autobench.episode import CycleAnswer, EpisodeView, run_episode
from search.autobench.tracking import run_tracking

NS = (3, 5, 7, 10, 15)


@pytest.mark.parametrize("seed", range(6))
def test_chemistry_intervention_changes_every_descendant_and_nothing_else(seed: int) -> None:
    oracle = Oracle(EnvSpec(env="chemistry", n=8, seed=seed, edge_prob=0.4))
    for node in range(8):
        obs = oracle.intervene(node)
        assert set(obs.changed) == graphs.descendants(oracle.truth, node)
        assert node not in obs.changed
        assert all(0 <= c < 4 for c in obs.after)


def test_plain_redraws_change_only_descendants_and_may_miss_some() -> None:
    missed = 0
    for seed in range(30):
        oracle = Oracle(
            EnvSpec(env="chemistry", n=6, seed=seed, edge_prob=0.5, forced_change=False, colours=2)
        )
        for node in range(6):
            obs, desc = oracle.intervene(node), graphs.descendants(oracle.truth, node)
            assert set(obs.changed) <= desc
            missed += len(desc - set(obs.changed))
    assert missed > 0  # with K = 2 half the re-draws keep their colour


@pytest.mark.parametrize("seed", range(6))
def test_social_intervention_adds_one_to_the_node_and_its_neighbours(seed: int) -> None:
    oracle = Oracle(EnvSpec(env="social", n=7, seed=seed, edge_prob=0.4))
    for node in (0, 3, 3, 6):
        obs = oracle.intervene(node)
        lifted = {node} | graphs.neighbours(oracle.truth, node)
        assert [a - b for a, b in zip(obs.after, obs.before)] == [int(i in lifted) for i in range(7)]


def test_draws_are_seeded() -> None:
    a, b = Oracle(EnvSpec(n=10, seed=4)), Oracle(EnvSpec(n=10, seed=4))
    assert a.truth == b.truth and a.state == b.state
    assert a.intervene(2) == b.intervene(2)
    assert Oracle(EnvSpec(n=10, seed=5)).truth != a.truth
    assert graphs.invalid_reason(a.truth, 10, "directed") == ""
    social = Oracle(EnvSpec(env="social", n=10, seed=4)).truth
    assert graphs.invalid_reason(social, 10, "undirected") == ""


class Stubborn:
    """Always the empty graph, always node 0, sometimes a malformed matrix."""

    name = "stubborn"

    def __init__(self, malformed: bool = False) -> None:
        self.malformed = malformed
        self.views: list[EpisodeView] = []

    def step(self, view: EpisodeView) -> CycleAnswer:
        self.views.append(view)
        adjacency = [[1]] if self.malformed and view.cycle % 2 else graphs.empty(view.n)
        return CycleAnswer(adjacency=adjacency, intervention=0 if view.cycle < 3 else view.n)


@pytest.mark.parametrize("env", ["chemistry", "social"])
def test_an_episode_stops_at_two_n_cycles(env: str) -> None:
    spec = EnvSpec(env=env, n=5, seed=1, edge_prob=0.6)
    assert any(map(any, Oracle(spec).truth))  # the empty hypothesis is wrong
    agent = Stubborn(malformed=True)
    result = run_episode(spec, agent)
    assert result.cycles == 10 and len(agent.views) == 10 and not result.success
    assert result.interventions == 2  # later interventions are out of range: nothing happens
    assert result.invalid_matrices == 5 and result.metrics["invalid_rate"] == 0.5
    assert "cycles_to_success" not in result.metrics
    assert agent.views[-1].history[0].invalid == "expected 5 rows"


@pytest.mark.parametrize("env", ["chemistry", "social"])
def test_the_ideal_agent_succeeds_on_every_seeded_graph(env: str) -> None:
    for n in NS:
        for seed in range(8):
            result = run_episode(EnvSpec(env=env, n=n, seed=seed), IdealAgent())
            assert result.success, (n, seed)
            assert result.cycles <= n + 1 and result.interventions <= n
            assert result.metrics["reachability_similarity"] == 1.0
            if env == "social":
                assert result.metrics["exact_adjacency"] == 1.0 and result.metrics["edge_f1"] == 1.0


def test_plain_redraws_can_hide_descendants_from_the_ideal_agent() -> None:
    results = [
        run_episode(EnvSpec(n=6, seed=s, forced_change=False, colours=2), IdealAgent()) for s in range(20)
    ]
    assert 0 < sum(r.success for r in results) < 20  # why forced change is the default
    assert any(r.interventions > 6 for r in results)  # a hidden descendant sends it round again


def test_the_random_agent_is_a_weak_reference() -> None:
    results = [run_episode(EnvSpec(n=7, seed=s), RandomAgent(seed=s)) for s in range(10)]
    assert sum(r.success for r in results) <= 2
    assert all(r.cycles == 14 or r.success for r in results)
    assert all(r.invalid_matrices == 0 for r in results)


def test_social_success_may_be_asked_by_reachability() -> None:
    spec = EnvSpec(env="social", n=6, seed=2, edge_prob=0.6, success="reachability")
    oracle = Oracle(spec)
    reach = graphs.reachability(oracle.truth)
    complete_on_components = [[reach[i][j] if i != j else 0 for j in range(6)] for i in range(6)]
    assert complete_on_components != oracle.truth
    assert oracle.is_right(complete_on_components)
    assert not Oracle(spec.model_copy(update={"success": None})).is_right(complete_on_components)


def test_scores_on_hand_made_graphs() -> None:
    truth = [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    guess = [[0, 1, 1], [1, 0, 0], [1, 0, 0]]
    assert graphs.edge_scores(truth, guess, "undirected") == (0.5, 0.5, 0.5)
    chain, fork = [[0, 1, 0], [0, 0, 1], [0, 0, 0]], [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert graphs.reachability(chain) == fork  # same reachability: the chain's closure is the fork
    assert graphs.similarity(graphs.reachability(chain), graphs.empty(3)) == 0.5
    assert graphs.invalid_reason([[0, 1], [1, 0]], 2, "directed") == "contains a directed cycle"
    assert graphs.invalid_reason([[0, 1], [0, 0]], 2, "undirected") == "not symmetric at (0, 1)"
    assert graphs.invalid_reason([[0, 2], [0, 0]], 2, "directed") == "row 0: entries must be 0 or 1"


def test_tracking_scores_integration_against_n_and_length() -> None:
    spec = EnvSpec(n=10, seed=3)
    ideal = run_tracking(spec, 30, IdealAgent())
    assert ideal.metrics["integration_exact"] == 1.0 and ideal.metrics["integration_accuracy"] == 1.0
    assert ideal.answer == integrate(ideal.trajectory, 10, "directed")
    short = run_tracking(spec, 3, IdealAgent())
    assert short.metrics["nodes_probed"] <= 3 and short.metrics["reachability_similarity"] <= 1.0
    rand = run_tracking(spec, 30, RandomAgent(seed=0))
    assert rand.metrics["integration_accuracy"] < 1.0
