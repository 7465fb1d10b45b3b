"""Long commands show their LLM calls one line each on stderr, in a pipe too (here a file):
`silva ideate` with the scripted model and a fake literature server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from silva.cli.main import main
from tests.ideation.fake_literature import fake_literature
from tests.ideation.test_ideate import write_topic


def test_ideate_prints_a_line_per_call(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with fake_literature() as (url, _):
        topic = write_topic(tmp_path, url, num_ideas=1, reflections=0)
        assert main(["ideate", str(topic), "--out", str(tmp_path / "ideas")]) == 0
    err = capfd.readouterr().err
    sent = re.findall(r"^\d\d:\d\d:\d\d ideation call sent to offline/thinker: ~\d+ tokens in", err, re.M)
    answered = re.findall(r"^\d\d:\d\d:\d\d ideation answered in \d+\.\d s: \d+ tokens out", err, re.M)
    assert sent and len(sent) == len(answered), err
