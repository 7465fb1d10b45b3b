"""`silva ideate`: scripted model, fake literature server on 127.0.0.1; novelty rejection,
duplicates, template mode, and a crash mid-ideation that keeps every idea already made."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from search.idea import load_idea
from silva.cli.main import main
from silva.ideation.archive import read_archive, top_ideas
from tests.helpers import make_template
from tests.ideation.fake_literature import fake_literature

HERE = Path(__file__).parent


def write_topic(tmp: Path, base_url: str, **overrides: object) -> Path:
    topic = {
        "topic": "Cheap defences of linear classifiers against label noise.",
        "num_ideas": 4,
        "reflections": 2,
        "novelty_rounds": 2,
        "max_similarity": 0.8,
        "literature": {
            "provider": "semantic_scholar",
            "base_url": base_url,
            "requests_per_s": 100,
            "max_retries": 0,
        },
        "llm": {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {
                "thinker": {
                    "provider": "offline",
                    "model": "scripted-thinker",
                    "price": {"input": 1.0, "output": 2.0},
                }
            },
            "roles": {"ideation": {"model": "thinker", "max_tokens": 4096}},
        },
        "scripted_fn": f"{HERE / 'scripted_ideas.py'}:respond",
        **overrides,
    }
    path = tmp / "topic.yaml"
    path.write_text(yaml.safe_dump(topic))
    return path


def test_ideate_archive_novelty_and_duplicates(tmp_path: Path) -> None:
    with fake_literature() as (url, queries):
        topic = write_topic(tmp_path, url)
        assert main(["ideate", str(topic), "--out", str(tmp_path / "ideas")]) == 0
    records = read_archive(tmp_path / "ideas" / "ideas.jsonl")
    by_name = {r.name: r for r in records}
    assert [r.status for r in records] == ["novel", "not_novel", "duplicate", "novel"]
    # Rejected as already published: the paper found is kept with the idea.
    rff = by_name["rff_speed"]
    assert rff.novelty.closest == ["s2:rff07"] and any(p["id"] == "s2:rff07" for p in rff.papers)
    assert rff.novelty.rounds and rff.novelty.rounds[0].query.lower().startswith("random features")
    assert rff.idea_file is None and not (tmp_path / "ideas" / "rff_speed.yaml").exists()
    # The duplicate names its twin.
    dup = by_name["smooth_asym_again"]
    assert dup.duplicate_of == "smooth_asym" and dup.similarity is not None and dup.similarity > 0.8
    # Every record has the idea file's fields and scores; kept ones are runnable idea files.
    for r in records:
        assert {"title", "hypothesis", "abstract", "experiments", "risks", "metrics"} <= set(r.idea)
        assert 1 <= r.scores.interestingness <= 10 and 1 <= r.scores.feasibility <= 10
    idea = load_idea(tmp_path / "ideas" / "smooth_asym.yaml")
    assert idea.primary.name == "accuracy"
    assert len(queries) >= 4  # several query rounds went to the literature server
    # Mutation: later ideas name the archived ideas they grew from.
    assert all(r.parents for r in records[1:])
    # The archive's top K, best total score first, as idea files for `silva run`.
    best = top_ideas(tmp_path / "ideas" / "ideas.jsonl", 1)
    assert len(best) == 1 and best[0].name in ("smooth_asym.yaml", "loss_curriculum.yaml")
    assert len(top_ideas(tmp_path / "ideas" / "ideas.jsonl", None)) == 2
    # Spend is accounted like a run's.
    assert (tmp_path / "ideas" / "llm_ledger.jsonl").read_text().count("\n") >= 4 * 4


def test_ideate_template_mode_extends_the_template(tmp_path: Path) -> None:
    template = make_template(tmp_path / "tpl")
    with fake_literature() as (url, _):
        topic = write_topic(tmp_path, url, topic="", num_ideas=1)
        assert (
            main(["ideate", str(topic), "--template", str(template), "--out", str(tmp_path / "ideas")]) == 0
        )
    (record,) = read_archive(tmp_path / "ideas" / "ideas.jsonl")
    assert record.template == str(template.resolve())
    # The template's declared metrics, not the model's.
    assert [m["name"] for m in record.idea["metrics"]] == ["score", "cost"]
    ledger = [json.loads(line) for line in (tmp_path / "ideas" / "llm_ledger.jsonl").read_text().splitlines()]
    assert ledger and all(r["role"] == "ideation" for r in ledger)


@pytest.mark.slow
def test_crash_mid_ideation_keeps_every_idea(tmp_path: Path) -> None:
    with fake_literature() as (url, _):
        topic = write_topic(tmp_path, url)
        archive = tmp_path / "ideas" / "ideas.jsonl"
        env = {**os.environ, "SILVA_TEST_HANG_AT_IDEA": "2", "PYTHONPATH": str(HERE.parent.parent)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "silva.cli.main", "ideate", str(topic), "--out", str(archive.parent)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                not archive.exists() or archive.read_text().count("\n") < 2
            ):
                time.sleep(0.1)
            time.sleep(0.3)  # it is now waiting on the model for the third idea
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=10)
        kept = read_archive(archive)
        assert [r.name for r in kept] == ["smooth_asym", "rff_speed"]
        assert load_idea(archive.parent / "smooth_asym.yaml").title.startswith("Label smoothing")
        # Ideation resumes from the archive: the next ideas are added after the saved ones.
        assert main(["ideate", str(topic), "--out", str(archive.parent), "--num", "1"]) == 0
    assert [r.name for r in read_archive(archive)] == ["smooth_asym", "rff_speed", "smooth_asym_again"]


def test_topic_errors(tmp_path: Path, capsys: object) -> None:
    bad = tmp_path / "topic.yaml"
    bad.write_text("topic: ''\nllm: {providers: {}, models: {}, roles: {}}\n")
    assert main(["ideate", str(bad)]) == 2
    assert "topic is empty" in capsys.readouterr().err  # type: ignore[attr-defined]


def test_an_idea_the_model_never_validates_is_reported_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_literature() as (url, _):
        topic = write_topic(
            tmp_path, url, num_ideas=2, scripted_fn=f"{HERE / 'scripted_ideas.py'}:respond_unusable"
        )
        code = main(["ideate", str(topic), "--out", str(tmp_path / "ideas")])
    out = capsys.readouterr().out
    assert code == 4, out  # finished without a result, as `silva run` with no good node
    assert out.count("not made:") == 2 and "0 of 0 new ideas kept; 2 not made" in out
    assert "Traceback" not in out


def test_a_long_template_is_cut_to_a_small_model_context(tmp_path: Path) -> None:
    """A template whose code alone fills a 4k context: the prompt keeps the topic, metrics and the
    task whole and cuts the code, so a small model still writes the idea."""
    template = make_template(tmp_path / "tpl")
    (template / "helpers.py").write_text("".join(f"# helper line {i}: unused padding\n" for i in range(700)))
    llm = {
        "providers": {"offline": {"kind": "scripted"}},
        "models": {
            "thinker": {
                "provider": "offline",
                "model": "scripted-thinker",
                "price": {"input": 0, "output": 0},
                "capabilities": {"context_tokens": 4096},
            }
        },
        "roles": {"ideation": {"model": "thinker", "max_tokens": 1024}},
    }
    with fake_literature() as (url, _):
        topic = write_topic(tmp_path, url, topic="", num_ideas=1, llm=llm)
        code = main(["ideate", str(topic), "--template", str(template), "--out", str(tmp_path / "ideas")])
    assert code == 0
    (record,) = read_archive(tmp_path / "ideas" / "ideas.jsonl")
    ledger = [json.loads(line) for line in (tmp_path / "ideas" / "llm_ledger.jsonl").read_text().splitlines()]
    assert ledger and all(r.get("error") is None for r in ledger)
