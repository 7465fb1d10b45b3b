"""Interactions the modes actually test: once two main effects on one outcome stand, DiscoPER and
ExperiGen run Silva's interaction follow-up and the stateful view suggests it; the planted
dose x activity interaction is accepted, and no interaction is accepted where none is planted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from engine.llm.providers.scripted import ScriptedProvider
from search.discovery.benchmarks import INTERACTION, interaction_table
from search.discovery.claims import Claim, ClaimStore
from search.discovery.evidence import GOOD
from search.discovery.interactions import follow_ups, kinds
from search.discovery.scripted import respond
from silva import lifecycle
from silva.config import load_config
from tests.stateful.helpers import run as run_stateful

A, B, Y = INTERACTION


def test_follow_ups_pair_two_main_effects_on_their_shared_outcome() -> None:
    df = pd.DataFrame({"a": [0.1 * i for i in range(40)], "b": [i % 4 for i in range(40)]})
    df["y"], df["code"], df["label"] = df["a"] * 2.5, [i % 3 for i in range(40)], "x"
    numeric, quantities = kinds(df)
    assert numeric == {"a", "b", "y", "code"} and quantities == {"a", "y"}
    established = {frozenset(("a", "y")): "n1", frozenset(("b", "y")): "n2", frozenset(("b", "code")): "n3"}
    # {b, code} and {b, y} share b, but b is an integer code: no outcome for an interaction.
    assert follow_ups(established, numeric, quantities, set()) == [(("a", "b", "y"), ["n1", "n2"])]
    # Already asked (either order of a and b), or an outcome of integer codes: nothing is due.
    assert follow_ups(established, numeric, quantities, {frozenset(("b", "a", "y"))}) == []
    coded = {frozenset(("a", "code")): "n1", frozenset(("b", "code")): "n2"}
    assert follow_ups(coded, numeric, quantities, set()) == []


def discover(tmp: Path, table: pd.DataFrame, in_flight: int = 4, **discovery: Any) -> list[Claim]:
    table.to_csv(tmp / "data.csv", index=False)
    cfg = {
        "name": "inter",
        "output_dir": str(tmp / "runs"),
        "seed": 1,
        "discovery": {"data": str(tmp / "data.csv"), "negative_controls": 3, **discovery},
        "budgets": {"wall_clock_s": 300, "node_timeout_s": 60},
        "executor": {"kind": "inprocess", "max_in_flight": in_flight},
        "sandbox": "none",
        "llm": {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"analyst": {"provider": "offline", "model": "scripted-analyst"}},
            "roles": {"code": {"model": "analyst"}, "feedback": {"model": "analyst"}},
        },
    }
    (tmp / "run.yaml").write_text(yaml.safe_dump(cfg))
    config = load_config(tmp / "run.yaml")
    run_dir, journal = lifecycle.create_run(config)
    outcome = lifecycle.execute(
        config, journal, providers={"offline": ScriptedProvider("offline", fn=respond)}
    )
    journal.log.close()
    assert outcome.status == "finished", outcome.message
    return ClaimStore(run_dir).load()


def interactions(claims: list[Claim]) -> list[Claim]:
    return [c for c in claims if c.test == "ols_interaction"]


def planted(interaction: float = 0.35) -> pd.DataFrame:
    """The benchmark table's three planted columns: its two noise columns would add seven of its
    ten pairs, each a proposal (a node of the suite's time) that no interaction follows up."""
    return interaction_table(3, n=500, interaction=interaction)[[A, B, Y]]


# The table without an interaction is run in one mode only: the gate that refuses the follow-up is
# the same code in both. DiscoPER's first three proposals test the three planted pairs. ExperiGen
# runs one chain at a time: each seed acquisition then sees every earlier test and takes an
# untested pair, so three chains of one seed reach both main effects whatever the machine's load
# (seeds acquired together can repeat a pair still running).
MODES = [
    pytest.param({"max_hypotheses": 3, "reflect_every": 20}, True, id="discoper"),
    pytest.param(
        {"mode": "experigen", "max_chains": 3, "chain_steps": 1, "in_flight": 1}, False, id="experigen"
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "null_table"), MODES)
def test_the_planted_interaction_is_followed_up_and_accepted(
    tmp_path: Path, mode: dict[str, Any], null_table: bool
) -> None:
    (tmp_path / "with").mkdir()
    claims = interactions(discover(tmp_path / "with", planted(), **mode))
    first, second = sorted((A, B))
    silva = [c for c in claims if c.kind == "interaction" and c.variables == [first, second, Y]]
    assert silva and silva[0].statement.startswith(f"Interaction `{first}` x `{second}` on `{Y}`: the effect")
    accepted = silva[0]
    assert accepted.status in GOOD, accepted.reason
    assert accepted.effect_heldout is not None and accepted.controls == 3 and accepted.controls_passed == 0
    if not null_table:
        return
    # The same two main effects with no interaction: the follow-up runs and is not accepted.
    (tmp_path / "without").mkdir()
    claims = interactions(discover(tmp_path / "without", planted(interaction=0), **mode))
    assert claims and not [c for c in claims if c.status in GOOD]


@pytest.mark.slow
@pytest.mark.parametrize("interaction", [0.35, 0.0])
def test_the_stateful_view_suggests_the_interaction(tmp_path: Path, interaction: float) -> None:
    table = interaction_table(3, n=800, interaction=interaction)
    outcome, strategy = run_stateful(tmp_path, table, max_steps=12)
    assert outcome.status == "finished"
    tested = [
        i
        for i in strategy.state.investigations.values()
        if i.evidence and i.evidence[0].analysis.tool == "interaction"
    ]
    assert tested and set(tested[0].claim.variables) == {A, B, Y}
    judgement = strategy.judge(tested[0])
    assert (judgement.verdict == "supported") == (interaction > 0), judgement.reason
    # Confirmed once on held-out, like any claim that passes on train.
    assert any(e.split == "heldout" for e in tested[0].evidence) == (interaction > 0)
