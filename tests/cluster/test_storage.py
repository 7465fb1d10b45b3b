"""Run directories synced to S3 (moto in server mode on 127.0.0.1) and to another directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.storage import sync
from silva.cli.main import main


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """A bucket on moto's S3 server; the query string that points pyarrow at it."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    ).create_bucket(Bucket="runs")
    # pyarrow takes credentials from the environment, as it would on a cluster node.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", "test")
        env.setenv("AWS_SECRET_ACCESS_KEY", "test")
        yield f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    server.stop()


def make_run(root: Path) -> Path:
    run = root / "t-20260101-000000"
    (run / "nodes" / "n0000" / "attempt-1").mkdir(parents=True)
    (run / "events.jsonl").write_text('{"type": "run_started"}\n')
    (run / "config.yaml").write_text("name: t\n")
    (run / "nodes" / "n0000" / "attempt-1" / "results.json").write_text('{"metrics": {"score": 1}}')
    (run / "nodes" / "n0000" / "attempt-1" / "plot.png").write_bytes(b"\x89PNG" + bytes(5000))
    (run / "writeup").mkdir()
    (run / "writeup" / "paper.pdf").write_bytes(b"%PDF-1.5" + bytes(20000))
    return run


def test_run_directory_round_trips_through_s3_incrementally(tmp_path: Path, s3: str) -> None:
    run = make_run(tmp_path)
    url = f"s3://runs/team/{run.name}?{s3}"
    first = sync(str(run), url)
    assert (first.copied, first.skipped) == (5, 0)
    again = sync(str(run), url)
    assert (again.copied, again.skipped) == (0, 5)  # nothing changed, nothing copied
    with (run / "events.jsonl").open("a") as f:
        f.write('{"type": "node_created"}\n')
    grown = sync(str(run), url)
    assert grown.copied == 1 and grown.bytes == (run / "events.jsonl").stat().st_size
    back = tmp_path / "restored"
    assert sync(url, str(back)).copied == 5
    for path in run.rglob("*"):
        if path.is_file():
            assert (back / path.relative_to(run)).read_bytes() == path.read_bytes()


def test_only_the_journal_and_papers(tmp_path: Path, s3: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path)
    url = f"s3://runs/partial?{s3}"
    assert main(["cluster", "sync", str(run), url, "--only", "journal", "--only", "papers"]) == 0
    assert "copied 3 file(s)" in capsys.readouterr().out
    back = tmp_path / "back"
    sync(url, str(back))
    assert sorted(str(p.relative_to(back)) for p in back.rglob("*") if p.is_file()) == [
        "config.yaml",
        "events.jsonl",
        "writeup/paper.pdf",
    ]


def test_fsspec_protocols_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(tmp_path)
    assert sync(str(run), "memory://silva/run1").copied == 5  # any fsspec protocol, through FSSpecHandler
    assert sync("memory://silva/run1", str(tmp_path / "m")).copied == 5
    assert main(["cluster", "sync", str(tmp_path / "missing"), "memory://x"]) == 2
    assert "nothing there to sync" in capsys.readouterr().err
    assert main(["cluster", "sync", str(run), "memory://x", "--only", "everything"]) == 2
    assert "journal, artifacts, papers" in capsys.readouterr().err
