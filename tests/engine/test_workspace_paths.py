"""Paths an experiment names (artifacts, plots, figures) stay inside its workspace in every
search mode, and a file over Silva's read cap is a clear buggy-node reason, never a crash."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.attempt import ExperimentJob
from engine.contract import MAX_RESULTS_BYTES
from engine.node import AttemptResult, MetricSpec
from sandbox.base import Limits
from search.discovery.evidence import Hypothesis
from search.discovery.job import DiscoveryJob

# Writes a file inside, a symlink to a host file, and names both plus `../` and absolute paths.
HOSTILE = """
import json, os
open('ok.txt', 'w').write('ok')
os.symlink({host!r}, 'link')
os.makedirs('sub', exist_ok=True)
names = ['ok.txt', 'sub/../ok.txt', 'link', '../../../../{name}', {host!r}, '/etc/passwd', 'sub']
"""


def hostile_code(host: Path, write: str) -> str:
    return HOSTILE.format(host=str(host), name=host.name) + write


def kept_names(r: AttemptResult, ws_rel: str) -> set[str]:
    return {str(Path(a).relative_to(ws_rel)) for a in r.artifacts}


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host")
    return secret


def template_job(tmp_path: Path, code: str) -> ExperimentJob:
    return ExperimentJob(
        node_id="n0000",
        attempt=1,
        run_dir=tmp_path / "run",
        files={"experiment.py": code.encode()},
        command=[sys.executable, "experiment.py"],
        params={},
        seed=0,
        stage="s",
        metrics=[MetricSpec(name="acc", primary=True)],
        limits=Limits(wall_s=30),
        sandbox="none",
    )


def test_template_mode_keeps_only_files_inside(tmp_path: Path, host_file: Path) -> None:
    code = hostile_code(
        host_file, "json.dump({'metrics': {'acc': 1.0}, 'artifacts': names}, open('results.json', 'w'))"
    )
    r = template_job(tmp_path, code).run([])
    assert r.status == "good", r.reason
    assert kept_names(r, r.workspace) == {"ok.txt"}


def test_template_mode_results_over_the_cap(tmp_path: Path) -> None:
    code = (
        "open('results.json', 'w').write('{\"metrics\": {\"acc\": 1.0}, \"notes\": \"' + 'x' * "
        f"{MAX_RESULTS_BYTES} + '\"}}')"
    )
    r = template_job(tmp_path, code).run([])
    assert r.status == "buggy"
    assert "results.json is" in r.reason and f"over the {MAX_RESULTS_BYTES}-byte cap" in r.reason


def test_template_mode_results_json_as_a_fifo(tmp_path: Path) -> None:
    r = template_job(tmp_path, "import os; os.mkfifo('results.json')").run([])
    assert r.status == "buggy" and r.reason == "no results.json written"  # and the host never blocked


def test_agentic_mode_keeps_only_files_inside(tmp_path: Path, host_file: Path) -> None:
    from tests.search.test_operators import run_job, scripted

    code = hostile_code(
        host_file, "json.dump({'metrics': {'acc': 1.0}, 'artifacts': names}, open('results.json', 'w'))"
    )
    r, _ = run_job(tmp_path / "run", scripted({"plan": "p", "code": code}))
    assert r.status == "good", r.reason
    assert kept_names(r, r.workspace) == {"ok.txt", "experiment.py", "results.json"}


def test_agentic_mode_plot_over_the_cap(tmp_path: Path) -> None:
    from search.agentic.operators.evaluate import MAX_PNG_BYTES
    from tests.search.test_operators import run_job, scripted

    code = "import json\njson.dump({'metrics': {'acc': 1.0}}, open('results.json', 'w'))\n"
    plot = f"open('fig.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + b'0' * {MAX_PNG_BYTES})\n"
    r, _ = run_job(tmp_path / "run", scripted({"plan": "p", "code": code, "plot_code": plot}))
    assert r.status == "buggy" and f"plot fig.png is {MAX_PNG_BYTES + 8} bytes, over the" in r.reason


def discovery_job(tmp_path: Path, code: str) -> DiscoveryJob:
    data = tmp_path / "data.parquet"
    data.write_bytes(b"not read by this code")
    hypothesis = Hypothesis(
        statement="x relates to y", h0="no relation", h1="a relation", variables=["x"], code=code
    )
    return DiscoveryJob(
        node_id="n0000",
        attempt=1,
        run_dir=tmp_path / "run",
        kind="heldout",
        stage="s",
        idea="i",
        limits=Limits(wall_s=30),
        sandbox="none",
        python=sys.executable,
        data_file=data,
        hypothesis=hypothesis,
    )


def outcome(figures: list[str] | str) -> dict[str, Any]:
    return {
        "test": "t",
        "effect": 0.5,
        "effect_name": "d",
        "p": 0.01,
        "log_p": -4.6,
        "n": 10,
        "figures": figures,
    }


def test_discovery_mode_keeps_only_figures_inside(tmp_path: Path, host_file: Path) -> None:
    code = hostile_code(
        host_file,
        f"json.dump({json.dumps(outcome([]))} | {{'figures': names}}, open('silva_test.json', 'w'))",
    )
    r = discovery_job(tmp_path, code).run([])
    assert r.status == "good", r.reason
    assert kept_names(r, r.workspace) == {"ok.txt", "hypothesis.py", "silva_test.json"}


def test_discovery_mode_result_over_the_cap(tmp_path: Path) -> None:
    from search.discovery.evidence import MAX_RESULT_BYTES

    code = f"open('silva_test.json', 'w').write(' ' * {MAX_RESULT_BYTES + 1})"
    r = discovery_job(tmp_path, code).run([])
    assert r.status == "buggy" and "silva_test.json is" in r.reason and "cap" in r.reason
