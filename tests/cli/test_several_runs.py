"""A glob such as `runs/label-noise-*` that matches several run directories: the command says
which ones it got and which to pick, instead of "unexpected extra argument"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from silva.cli.main import main


@pytest.mark.parametrize("command", ["status", "cost", "view", "export", "resume", "writeup"])
def test_several_run_directories_name_them_and_the_latest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    runs = [tmp_path / "label-noise-20261126-1", tmp_path / "label-noise-20261126-2"]
    for age, run in zip((200, 100), runs):
        run.mkdir()
        (run / "events.jsonl").write_text("")
        os.utime(run / "events.jsonl", (1e9 - age, 1e9 - age))
    assert main([command, *map(str, runs)]) == 2
    err = capsys.readouterr().err
    assert f"{command} takes one run directory; 2 were given" in err
    assert f"pick one, e.g. the latest: {runs[1]}" in err
