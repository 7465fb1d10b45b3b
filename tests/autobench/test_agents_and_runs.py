"""The LLM agent through Silva's LLM layer (scripted provider), and bench runs on the engine:
journaled nodes, the summary table, resume, budgets and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from engine.journal import Journal
from engine.llm import LLMConfig, build_gateway
from engine.llm.providers.scripted import ScriptedProvider
from engine.node import NodeStatus
from search.autobench.agents import LLMAgent
from search.autobench.envs import EnvSpec
from search.autobench.episode import run_episode
from search.autobench.scripted import ScriptedScientist
from search.autobench.strategy import AutoBenchOutcome, AutoBenchStrategy
from search.autobench.tracking import run_tracking
from silva.cli import bench
from silva.cli.main import main

LLM = {
    "providers": {"offline": {"kind": "scripted"}},
    "models": {"m": {"provider": "offline", "model": "m"}},
    "roles": {"code": {"model": "m"}},
}


def llm_agent(tmp: Path, fn: object) -> tuple[LLMAgent, ScriptedProvider]:
    provider = ScriptedProvider("offline", fn=fn)  # type: ignore[arg-type]
    gateway = build_gateway(LLMConfig.model_validate(LLM), tmp, None, {}, providers={"offline": provider})
    return LLMAgent(gateway.client()), provider


def test_llm_agent_plays_through_structured_outputs(tmp_path: Path) -> None:
    agent, provider = llm_agent(tmp_path, ScriptedScientist(memory=20, slip=0.0))
    result = run_episode(EnvSpec(n=5, seed=1), agent)
    assert result.success and result.invalid_matrices == 0
    assert len(provider.calls) == result.cycles
    prompt = provider.calls[-1].messages[-1].text
    assert "Cycle" in prompt and "changed:" in prompt and "hidden" in prompt
    assert all(c.answer.justification for c in result.trace)


def test_forgetful_scripted_agent_degrades_with_n_and_length(tmp_path: Path) -> None:
    agent, _ = llm_agent(tmp_path, ScriptedScientist(memory=4, slip=0.0))
    assert run_episode(EnvSpec(n=4, seed=0), agent).success
    assert not run_episode(EnvSpec(n=12, seed=0, edge_prob=0.5), agent).success
    short, long = run_tracking(EnvSpec(n=8, seed=0), 4, agent), run_tracking(EnvSpec(n=8, seed=0), 40, agent)
    assert short.metrics["integration_exact"] == 1.0 and long.metrics["integration_exact"] == 0.0


def test_unparsable_answers_are_invalid_cycles_not_crashes(tmp_path: Path) -> None:
    agent, provider = llm_agent(tmp_path, lambda call: "I think node 2 matters.")
    result = run_episode(EnvSpec(n=3, seed=0, edge_prob=0.9), agent)
    assert result.cycles == 6 and result.invalid_matrices == 6 and result.interventions == 0
    assert result.metrics["invalid_rate"] == 1.0
    assert len(provider.calls) == 6 * 3  # each cycle: one ask and two re-asks


def test_bench_command_runs_episodes_as_journaled_nodes(tmp_path: Path) -> None:
    code = main(
        [
            "bench",
            "autobench",
            "--env",
            "chemistry",
            "--env",
            "social",
            "--n",
            "3",
            "--n",
            "5",
            "--graphs",
            "2",
            "--tracking",
            "5",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    journal = Journal.open(run_dir)
    assert len(journal.nodes) == 2 * 2 * 2 * 3 * 2  # envs x ns x graphs x agents x (episode + tracking)
    assert all(n.status == NodeStatus.GOOD for n in journal)
    node = next(n for n in journal if n.origin.label == "scripted" and n.kind == "episode")
    outcome = node.outcome_as(AutoBenchOutcome)
    assert outcome is not None and outcome.key == node.params["key"]
    trace = json.loads((run_dir / outcome.trace).read_text())
    assert trace["cycles"] == node.metric("cycles") == len(trace["trace"])
    summary = json.loads((run_dir / "summary.json").read_text())
    ideal = [r for r in summary["rows"] if r["agent"] == "ideal" and r["task"] == "episode"]
    assert [r["success"] for r in ideal] == [1.0] * 4
    assert {r["env"] for r in summary["rows"] if "edge_f1" in r} == {"social"}
    assert summary["agents"]["ideal"]["success_rate"] == 1.0
    assert (run_dir / "scripted" / "llm_ledger.jsonl").is_file()


def test_a_stopped_bench_run_resumes_without_replaying_finished_episodes(tmp_path: Path) -> None:
    cfg = bench.load_autobench_config(None, {"ns": [3, 4], "graphs": 2, "output_dir": tmp_path})
    run_dir, journal = bench.create_run(cfg)
    # A driver killed mid-run: two nodes created, one with a result, one still in flight.
    clients, closers = bench._gateways(cfg, run_dir)
    strategy = AutoBenchStrategy(cfg, journal, run_dir, clients)
    done, inflight = (journal.add_node(n) for n in strategy.propose(2))
    journal.attempt_started(done.id, 1)
    journal.attempt_finished(done.id, 1, strategy.job_for(done, 1).run([]))
    journal.attempt_started(inflight.id, 1)
    for close in closers:
        close()

    assert main(["bench", "autobench", "--resume", str(run_dir)]) == 0
    journal = Journal.open(run_dir)
    keys = [n.params["key"] for n in journal]
    assert len(keys) == len(set(keys)) == len(cfg.tasks())
    assert journal.nodes[done.id].attempts == 1 and journal.nodes[inflight.id].attempts == 2
    assert all(n.is_finished for n in journal)


def test_node_budget_stops_a_bench_run_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "ns": [3],
                "graphs": 3,
                "agents": ["ideal", "random"],
                "budgets": {"max_nodes": 4},
                "output_dir": str(tmp_path / "runs"),
            }
        )
    )
    assert main(["bench", "autobench", "--config", str(path)]) == 3  # stopped by a budget, resumable
    (run_dir,) = (tmp_path / "runs").iterdir()
    journal = Journal.open(run_dir)
    assert len(journal.nodes) == 4 and journal.stop is not None and journal.stop.budget == "max_nodes"


def test_bad_bench_input_exits_2(tmp_path: Path, capsys: object) -> None:
    assert main(["bench", "autobench", "--env", "physics", "--output-dir", str(tmp_path)]) == 2
    assert main(["bench", "autobench", "--agent", "llm", "--n", "3", "--output-dir", str(tmp_path)]) == 2
    assert main(["bench", "autobench", "--resume", str(tmp_path)]) == 2
    assert list(tmp_path.iterdir()) == []  # nothing made for a refused config
