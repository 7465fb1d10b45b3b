"""bench/bench_gpu.py is what a session runs in the few minutes a GPU machine is lent; its `--cpu`
path keeps it working where there is none: the same Silva runs on Ray, a numpy experiment in
place of the PyTorch one, and the same checks read from the journal and the ledger."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_file
from tests.llm.fake_servers import FakeLLMServer

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_gpu.py"


def bench_gpu() -> ModuleType:
    return load_file(BENCH, "bench_gpu")


@pytest.mark.e2e
@pytest.mark.usefixtures("ray_cluster")
@pytest.mark.timeout(240)
def test_the_gpu_check_runs_and_reads_the_llm_search_without_a_gpu(tmp_path: Path) -> None:
    bench = bench_gpu()
    with FakeLLMServer() as server:
        bench.fake_llm(server, 0.05, seed=7)
        row = bench.one_run(tmp_path, "none", True, server.url)
    assert (row["outcome"], row["message"]) == ("finished", "all four stages complete")
    # Every experiment printed what it saw: no device, and an empty CUDA_VISIBLE_DEVICES from
    # the `none` sandbox for an attempt given no GPU.
    assert row["experiments_reporting"] >= 4 and row["devices_seen"] == ["cpu"]
    assert row["cuda_visible_devices_seen"] == [""]
    assert row["runs_at_once_max"] >= 2 and row["cluster_cpus"] >= row["runs_at_once_max"]
    assert {"think", "run", "judge"} <= set(row["steps"])
    assert row["llm_calls_of_run_nodes"] > 0 and row["llm_calls_while_own_gpu_held"] == 0


def test_spans_at_once() -> None:
    bench = bench_gpu()
    assert bench.most_at_once([(0.0, 2.0), (1.0, 3.0), (2.5, 4.0), (5.0, 6.0)]) == 2
    assert bench.most_at_once([]) == 0


def test_without_a_gpu_it_says_so_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bench = bench_gpu()
    monkeypatch.setattr(bench, "gpu_name", lambda: None)
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "gpu.json")
    monkeypatch.setattr("sys.argv", ["bench_gpu.py"])
    bench.main()
    assert "no CUDA device here" in capsys.readouterr().out and not (tmp_path / "gpu.json").exists()
