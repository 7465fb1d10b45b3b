"""Sending a run to a tracker without a server: `silva track` on the old runs of tests/data into
MLflow's default store in the run directory, a follower killed inside an event, W&B offline,
a tracker that does not answer, and the config section."""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.claims import LEDGER_FILE
from engine.errors import ConfigError, EnvironmentFailure
from engine.events import AttemptFinished, RunStarted
from engine.journal import Journal
from engine.node import AttemptResult, MetricValue, Node
from silva.cli.main import main
from silva.config import load_config
from silva.tracking.config import TrackingConfig, available_backends
from silva.tracking.cursor import Cursor, lock
from silva.tracking.process import TrackerProcess, start_tracker, tracker_env
from silva.tracking.send import follow, opened, send_run
from tests.helpers import make_config, make_template

mlflow = pytest.importorskip("mlflow")
DATA = Path(__file__).parent.parent / "data"
BLOCK = 32768


def copy_run(tmp_path: Path, name: str) -> Path:
    run_dir = tmp_path / name
    shutil.copytree(DATA / name, run_dir)
    return run_dir


def read_back(uri: str, experiment: str) -> list[Any]:
    client = mlflow.MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return list(client.search_runs([found.experiment_id], max_results=5000))


def check_once(uri: str, experiment: str, run_dir: Path) -> list[Any]:
    """Every node of the run is one tracker run whose metrics have one value each, at its order."""
    journal = Journal.open(run_dir, read_only=True)
    runs = read_back(uri, experiment)
    keys = Counter(r.data.tags["silva.key"] for r in runs)
    assert max(keys.values()) == 1, keys.most_common(3)
    nodes = {r.data.tags["silva.node_id"]: r for r in runs if r.data.tags["silva.level"] == "node"}
    assert set(nodes) == {n.id for n in journal if n.stage not in ("paper", "review")}
    client = mlflow.MlflowClient(tracking_uri=uri)
    for order, node in enumerate(journal):
        run = nodes[node.id]
        assert run.data.tags["silva.stage"] == node.stage and run.data.tags["silva.kind"] == node.kind
        assert run.data.tags["silva.status"] == node.status.value
        for m in node.metrics:
            history = client.get_metric_history(run.info.run_id, m.name)
            assert [(h.step, h.value) for h in history] == [(order, m.value)]
    parents = [r for r in runs if r.data.tags["silva.level"] == "run"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert parents[0].data.metrics["nodes.finished"] == len(journal.nodes)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["format1_run", "format2_run"])
def test_silva_track_sends_an_old_run_to_the_store_in_its_directory(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = copy_run(tmp_path, name)
    events = (run_dir / "events.jsonl").read_bytes()
    assert main(["track", str(run_dir)]) == 0
    assert "sent the records of" in capsys.readouterr().out
    uri = f"sqlite:///{run_dir.resolve() / 'mlflow.db'}"
    experiment = "label-noise" if name == "format1_run" else "cohort"
    runs = check_once(uri, experiment, run_dir)
    assert main(["track", str(run_dir)]) == 0  # again: nothing new, nothing twice
    assert "records of 0 new journal events" in capsys.readouterr().out
    assert len(read_back(uri, experiment)) == len(runs)
    assert (run_dir / "events.jsonl").read_bytes() == events  # the journal is only read


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after it runs, not even the cursor's save."""


@pytest.mark.slow
def test_a_follower_killed_inside_an_event_sends_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after creating a node's run, then after logging a node's metrics, before the cursor
    passed either event: the next follower finds both and sends neither again."""
    run_dir = copy_run(tmp_path, "format2_run")
    cfg = TrackingConfig()
    from silva.tracking.backends.mlflow import MlflowBackend

    for method in ("create_run", "log_metrics"):
        real = getattr(MlflowBackend, method)
        calls = {"n": 0}

        def dies_on_third(self: Any, *a: Any, _real: Any = real, _calls: Any = calls, **kw: Any) -> Any:
            out = _real(self, *a, **kw)
            _calls["n"] += 1
            if _calls["n"] == 3:
                raise Killed
            return out

        monkeypatch.setattr(MlflowBackend, method, dies_on_third)
        with pytest.raises(Killed), opened(run_dir, cfg, wait=False) as follower:
            follower.step()
        monkeypatch.setattr(MlflowBackend, method, real)
    send_run(run_dir, cfg)
    check_once(f"sqlite:///{run_dir.resolve() / 'mlflow.db'}", "cohort", run_dir)


def wandb_records(path: Path) -> Iterator[Any]:
    """The records of an offline W&B run file: a LevelDB-style log of protobuf records in 32 KiB
    blocks after a 7-byte header (what `wandb sync` reads)."""
    from wandb.proto import wandb_internal_pb2

    data, pos, part = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # a block's tail too short for a record header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _, size, kind = struct.unpack("<IHB", data[pos : pos + 7])
        part, pos = part + data[pos + 7 : pos + 7 + size], pos + 7 + size
        if kind == 0 and size == 0:
            return
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]
            record.ParseFromString(part)
            part = b""
            yield record


def wandb_summary(path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for r in wandb_records(path):
        if r.WhichOneof("record_type") == "summary":
            values.update(
                {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.summary.update}
            )
    return values


@pytest.mark.slow
def test_weights_and_biases_offline_through_the_same_interface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = copy_run(tmp_path, "format2_run")
    assert main(["track", str(run_dir), "--backend", "wandb"]) == 0
    assert "(wandb)" in capsys.readouterr().out
    # `finish()` only tells wandb's service to close the run's file (`inform_finish` is not awaited):
    # read it once the service has ended, as after `silva track` exits, not while it may still be
    # writing (a four-worker run at load found no record of the first node).
    import wandb

    wandb.teardown()
    (log,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    values = wandb_summary(log)
    journal = Journal.open(run_dir, read_only=True)
    for node in journal:
        assert values[f"node:{node.id}/silva.status"] == node.status.value
        for m in node.metrics:
            assert values[f"node:{node.id}/{m.name}"] == pytest.approx(m.value)
    assert values["nodes.finished"] == len(journal.nodes)
    assert "wandb" in available_backends() and "mlflow" in available_backends()


def test_a_tracker_that_does_not_answer_is_a_warning_and_the_records_wait(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path, "format2_run")
    cfg = TrackingConfig(uri="http://127.0.0.1:9", drain_s=0)  # the discard port: nothing listens
    said: list[str] = []
    left = follow(run_dir, cfg, lambda: True, said.append)
    assert left == (run_dir / "events.jsonl").stat().st_size  # nothing passed: all of it waits
    assert len(said) == 1 and "the run goes on and the records wait" in said[0]
    with pytest.raises(EnvironmentFailure, match="did not take a record"):
        send_run(run_dir, cfg)
    assert main(["track", str(run_dir), "--uri", str(cfg.uri)]) == 3
    assert Cursor.load(Cursor.path(run_dir, "mlflow", cfg.uri or ""), "mlflow", "").offset == 0


def test_the_tracking_section(tmp_path: Path) -> None:
    assert TrackingConfig.model_validate("wandb").backend == "wandb"
    with pytest.raises(ValueError, match="unknown tracking backend 'neptune'; available: mlflow, wandb"):
        TrackingConfig.model_validate({"backend": "neptune"})
    run_dir = copy_run(tmp_path, "format2_run")
    assert main(["track", str(run_dir), "--backend", "neptune"]) == 2
    assert main(["track", str(tmp_path / "nowhere")]) == 2
    held = lock(Cursor.path(run_dir, "mlflow", "default"), wait=False)  # a live run's follower
    assert main(["track", str(run_dir)]) == 2
    held.close()


def test_the_follower_gets_no_llm_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-x")
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-y")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "t")
    env = tracker_env(["MY_PROVIDER_KEY"])
    assert "ANTHROPIC_API_KEY" not in env and "MY_PROVIDER_KEY" not in env
    assert env["MLFLOW_TRACKING_TOKEN"] == "t"


@pytest.mark.slow
def test_the_follower_process_sends_the_run_and_ends_when_told(tmp_path: Path) -> None:
    """The process a session starts, with its section as given (not read from config.yaml)."""
    run_dir = copy_run(tmp_path, "format2_run")
    follower = TrackerProcess(run_dir, TrackingConfig(drain_s=120), [])
    follower.stop()
    assert follower.proc.returncode == 0
    check_once(f"sqlite:///{run_dir.resolve() / 'mlflow.db'}", "cohort", run_dir)


@pytest.mark.slow
def test_the_paper_reviews_and_claim_ledger_go_on_the_idea_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "papers"
    journal = Journal.open(run_dir)
    journal.record(RunStarted(config={"name": "papers"}))
    paper_dir = run_dir / "paper" / "default"
    paper_dir.mkdir(parents=True)
    for name in ("paper.pdf", LEDGER_FILE, "review.json"):
        (paper_dir / name).write_text("{}")
    for stage, files in (("paper", ["paper.pdf"]), ("review", ["review.json"])):
        node = journal.add_node(Node(stage=stage, kind=stage))
        result = AttemptResult(
            status="good",
            reason=f"{stage} done",
            artifacts=[f"paper/default/{f}" for f in files],
            workspace="paper/default",
        )
        journal.record(AttemptFinished(node_id=node.id, attempt=1, result=result))
    journal.log.close()
    send_run(run_dir, TrackingConfig())
    runs = read_back(f"sqlite:///{run_dir.resolve() / 'mlflow.db'}", "papers")
    assert sorted(r.data.tags["silva.level"] for r in runs) == ["idea", "run"]  # documents, not nodes
    idea = next(r for r in runs if r.data.tags["silva.level"] == "idea")
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{run_dir.resolve() / 'mlflow.db'}")
    listed = {f.path for d in ("paper", "review") for f in client.list_artifacts(idea.info.run_id, d)}
    # The reviews were checked against the same ledger: it goes with them too.
    ledgers = {f"{d}/{LEDGER_FILE}" for d in ("paper", "review")}
    assert listed == {"paper/paper.pdf", "review/review.json"} | ledgers
    assert idea.data.tags["silva.paper"] == "paper done" and idea.data.tags["silva.review"] == "review done"


def test_a_run_with_a_tracker_whose_package_is_missing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(make_config(tmp_path, make_template(tmp_path / "tpl"), tracking="wandb"))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"needs the wandb package.*pip install 'silva\[tracking\]'"):
        start_tracker(cfg, tmp_path)


class LossyTracker(ThreadingHTTPServer):
    """MLflow's tracking server on 127.0.0.1 that does every request but loses the answer of the
    first run create and of the first metrics batch: the client sees the connection drop after
    the server did the work, as when a request times out under load."""

    def __init__(self) -> None:
        from mlflow.server import app

        self.app = app.test_client()
        self.dropped: list[str] = []
        super().__init__(("127.0.0.1", 0), LossyHandler)

    def lose(self, method: str, path: str, body: bytes) -> bool:
        if method != "POST":
            return False
        if path.endswith("/runs/create"):
            what = "create"
        elif path.endswith("/runs/log-batch") and json.loads(body).get("metrics"):
            what = "metrics"
        else:
            return False
        if what in self.dropped:
            return False
        self.dropped.append(what)
        return True


class LossyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the client's keep-alive session, as with a real server
    server: LossyTracker

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = self.server.app.open(
            self.path, method=self.command, data=body, headers=dict(self.headers.items())
        )
        if self.server.lose(self.command, self.path.split("?")[0], body):
            self.close_connection = True  # done, and no answer
            return
        self.send_response(answer.status_code)
        for k, v in answer.headers.items():
            if k.lower() not in ("content-length", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(answer.data)))
        self.end_headers()
        self.wfile.write(answer.data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


@pytest.mark.slow
def test_a_record_whose_answer_was_lost_is_not_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server created the run and logged the metrics, but the answers never came: the
    follower's retry finds them, and neither MLflow's retry nor the follower's sends them twice."""
    from mlflow.server import handlers
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    db = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # The store `mlflow server --backend-store-uri` would open, for this test only.
    monkeypatch.setattr(handlers, "_tracking_store", SqlAlchemyStore(db, (tmp_path / "art").as_uri()))
    server = LossyTracker()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_dir = tmp_path / "lossy"
    journal = Journal.open(run_dir)
    journal.record(RunStarted(config={"name": "lossy"}))
    node = journal.add_node(Node(stage="draft", kind="draft"))
    result = AttemptResult(status="good", metrics=[MetricValue(name="acc", value=0.75)])
    journal.record(AttemptFinished(node_id=node.id, attempt=1, result=result))
    journal.log.close()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        cfg = TrackingConfig(uri=url, experiment="lossy", retry_max_s=0.1, drain_s=120)
        said: list[str] = []
        assert follow(run_dir, cfg, lambda: True, said.append) == 0
    finally:
        server.shutdown()
        server.server_close()
    runs = read_back(db, "lossy")
    assert sorted(r.data.tags["silva.level"] for r in runs) == ["idea", "node", "run"]
    (sent,) = (r for r in runs if r.data.tags["silva.level"] == "node")
    history = mlflow.MlflowClient(tracking_uri=db).get_metric_history(sent.info.run_id, "acc")
    assert [(h.step, h.value) for h in history] == [(0, 0.75)]
    # Both answers were lost, and the follower (not MLflow's own retry) tried again.
    assert server.dropped == ["create", "metrics"] and "did not take a record" in said[0]
