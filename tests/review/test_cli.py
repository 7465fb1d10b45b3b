"""`silva review` and `silva review calibrate` from the command line, offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from review import REVIEW_JSON, load_result
from review.calibrate import METRICS, Item, calibrate, fast_metric, load_dataset, metric
from silva.cli.main import main

SCRIPTED = str(Path(__file__).with_name("papers.py").resolve()) + ":scripted_reviewer"


def write_config(path: Path, **extra: object) -> Path:
    data = {
        "llm": {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"toy": {"provider": "offline", "model": "toy-1"}},
            "roles": {"review": {"model": "toy"}},
        },
        "scripted_fn": SCRIPTED,
        **extra,
    }
    path.write_text(yaml.safe_dump(data))
    return path


def test_cli_reviews_a_pdf_with_the_config_review_section(
    run_dir: Path, tmp_path: Path, capsys: object
) -> None:
    paper_dir = tmp_path / "alone"
    shutil.copytree(run_dir / "paper" / "bad", paper_dir)  # outside the run: no artifacts to compare
    cfg = write_config(tmp_path / "review.yaml", review={"reviews": 4, "page_limit": 2, "temperature": 0.2})
    assert main(["review", str(paper_dir / "paper.pdf"), "--reviews", "2", "--config", str(cfg)]) == 0
    result = load_result(paper_dir / REVIEW_JSON)
    assert len(result.reviews) == 2 and result.config.page_limit == 2 and result.decision == "reject"
    assert result.integrity.check("numbers").status == "skipped"
    assert result.integrity.check("page_limit").status == "findings"
    assert (paper_dir / "llm_ledger.jsonl").is_file()
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "reject" in out and "duplicate_figures" in out


def test_cli_reviews_every_paper_of_a_run_dir_with_its_snapshot(run_dir: Path) -> None:
    write_config(run_dir / "config.yaml", review={"reviews": 1})
    assert main(["review", str(run_dir)]) == 0
    assert all((run_dir / "paper" / idea / REVIEW_JSON).is_file() for idea in ("good", "bad"))


def test_cli_bad_input_exits_2(tmp_path: Path, run_dir: Path) -> None:
    assert main(["review", str(tmp_path / "missing.pdf")]) == 2
    pdf = run_dir / "paper" / "good" / "paper.pdf"
    standalone = tmp_path / "p.pdf"
    shutil.copy(pdf, standalone)
    assert main(["review", str(standalone)]) == 2  # no --config and no run directory
    no_role = tmp_path / "c.yaml"
    no_role.write_text(
        yaml.safe_dump(
            {
                "llm": {
                    "providers": {"o": {"kind": "scripted"}},
                    "models": {"t": {"provider": "o", "model": "t"}},
                    "roles": {},
                }
            }
        )
    )
    assert main(["review", str(standalone), "--config", str(no_role)]) == 2
    bad_persona = write_config(tmp_path / "p.yaml", review={"personas": ["skeptik"]})
    assert main(["review", str(standalone), "--config", str(bad_persona)]) == 2


def test_metrics_on_a_labelled_set_with_known_answers() -> None:
    # 4 accepted, 6 rejected; accept when score >= 5: TP 3, FN 1, FP 2, TN 4.
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    s = np.array([9, 7, 5, 2, 6, 5, 4, 3, 2, 1], dtype=float)
    # AUC: of the 24 (accepted, rejected) pairs the accepted paper scores higher in 17, ties in 2.
    expected = {
        "accuracy": 0.7,
        "fpr": 2 / 6,
        "fnr": 0.25,
        "balanced_accuracy": (0.75 + 4 / 6) / 2,
        "f1": 2 * 3 / (2 * 3 + 2 + 1),
        "auc": 18 / 24,
    }
    for name in METRICS:
        assert abs(metric(name, y, s, 5.0) - expected[name]) < 1e-12, name
        assert abs(float(fast_metric(name, y, s, 5.0)) - expected[name]) < 1e-12, name


def synthetic(n: int, seed: int, separation: float) -> list[Item]:
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        accept = i % 3 == 0
        score = float(np.clip(np.round(rng.normal(4.5 + (separation if accept else 0), 1.0)), 1, 10))
        items.append(Item(paper=Path(f"p{i}.pdf"), accept=accept, score=score))
    return items


def test_calibration_perfectly_separable_set_gives_exact_answers() -> None:
    items = [
        Item(paper=Path(f"p{i}.pdf"), accept=i % 2 == 0, score=8.0 if i % 2 == 0 else 3.0) for i in range(40)
    ]
    report, _ = calibrate(items, dataset="separable", n_resamples=300)
    assert 3.0 < report.threshold <= 8.0
    for name, value in {"balanced_accuracy": 1, "accuracy": 1, "f1": 1, "auc": 1, "fpr": 0, "fnr": 0}.items():
        m = report.metrics[name]
        assert (m.value, m.low, m.high) == (value, value, value), name
    reject = report.baselines["always reject"]
    assert reject["balanced_accuracy"] == 0.5 and reject["fnr"] == 1.0 and reject["f1"] == 0.0


def test_calibration_intervals_and_baselines_on_a_noisy_set() -> None:
    report, _ = calibrate(synthetic(150, 3, separation=2.0), dataset="noisy", n_resamples=500)
    for name in METRICS:
        m = report.metrics[name]
        assert 0.0 <= m.low <= m.value <= m.high <= 1.0, name
        assert m.high - m.low > 0.01, name  # a real interval on a noisy set
    assert report.metrics["balanced_accuracy"].low > 0.5  # better than both baselines' 0.5
    assert report.calibration_papers + report.test_papers == 150
    random = next(v for k, v in report.baselines.items() if k.startswith("random"))
    assert random["balanced_accuracy"] == 0.5 and abs(random["fpr"] - (1 - random["fnr"])) < 1e-12


def test_cli_calibrate_writes_table_json_and_plot(tmp_path: Path) -> None:
    rows = ["paper,decision,score"] + [
        f"p{i}.pdf,{'accept' if it.accept else 'reject'},{it.score}"
        for i, it in enumerate(synthetic(60, 5, separation=2.5))
    ]
    dataset = tmp_path / "iclr.csv"
    dataset.write_text("\n".join(rows) + "\n")
    assert len(load_dataset(dataset)) == 60
    assert main(["review", "calibrate", str(dataset), "--resamples", "200"]) == 0
    out = tmp_path / "iclr-calibration"
    report = json.loads((out / "calibration.json").read_text())
    assert (
        set(report["metrics"]) == set(METRICS)
        and "human consistency (NeurIPS 2021 experiment)" in report["references"]
    )
    assert "| balanced_accuracy |" in (out / "calibration.md").read_text()
    assert (out / "reliability.png").read_bytes().startswith(b"\x89PNG")


def test_cli_calibrate_fixed_threshold_on_all_papers_beside_the_tuned_split(tmp_path: Path) -> None:
    items = synthetic(40, 7, separation=2.0)
    dataset = tmp_path / "fixed.csv"
    dataset.write_text(
        "paper,decision,score\n"
        + "\n".join(
            f"p{i}.pdf,{'accept' if it.accept else 'reject'},{it.score}" for i, it in enumerate(items)
        )
    )
    assert main(["review", "calibrate", str(dataset), "--resamples", "200", "--threshold", "6"]) == 0
    out = tmp_path / "fixed-calibration"
    report = json.loads((out / "calibration.json").read_text())
    fixed = report["fixed"]
    assert fixed["threshold"] == 6 and fixed["papers"] == 40
    y = np.array([it.accept for it in items])
    s = np.array([it.score for it in items])
    assert fixed["metrics"]["balanced_accuracy"]["value"] == pytest.approx(
        metric("balanced_accuracy", y, s, 6.0)
    )
    table = (out / "calibration.md").read_text()
    assert "Tuned split:" in table and "Fixed threshold (the published protocol)" in table
    assert "on all 40 scored papers" in table


def test_cli_calibrate_reviews_papers_without_a_score(run_dir: Path, tmp_path: Path) -> None:
    # The scripted reviewer scores every paper alike, so only the plumbing is under test here:
    # unscored rows are reviewed (their overall comes from the meta-review), scored rows are not.
    cfg = write_config(tmp_path / "c.yaml", review={"reviews": 1})
    good = run_dir / "paper" / "good" / "paper.pdf"
    lines = ["paper,decision,score", f"{good},reject,"]
    lines += [f"p{i}.pdf,{'accept' if i % 2 else 'reject'},{8 if i % 2 else 3}" for i in range(12)]
    dataset = tmp_path / "d.csv"
    dataset.write_text("\n".join(lines) + "\n")
    assert main(["review", "calibrate", str(dataset), "--config", str(cfg), "--resamples", "100"]) == 0
    assert load_result(good.parent / REVIEW_JSON).overall == 5.0
    # Without --config an unscored paper cannot be reviewed: a clear error, nothing written.
    (good.parent / REVIEW_JSON).unlink()
    assert main(["review", "calibrate", str(dataset), "--resamples", "100"]) == 2
    assert not (good.parent / REVIEW_JSON).exists()


def test_calibrate_bad_dataset_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("paper,decision\np.pdf,maybe\n")
    assert main(["review", "calibrate", str(bad)]) == 2
    few = tmp_path / "few.csv"
    few.write_text("paper,decision,score\na.pdf,accept,7\nb.pdf,reject,3\n")
    assert main(["review", "calibrate", str(few)]) == 2


def test_cli_reviews_a_paper_inside_its_run_with_the_snapshot_silva_wrote(run_dir: Path) -> None:
    # A run without a review phase snapshots `review: null` and `budgets` with nulls.
    write_config(run_dir / "config.yaml", review=None, writeup=None, budgets={"dollars": None})
    assert main(["review", str(run_dir / "paper" / "good" / "paper.pdf")]) == 0
    assert (run_dir / "paper" / "good" / REVIEW_JSON).is_file()


def test_cli_review_in_a_run_without_an_llm_says_to_pass_config(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"name": "demo", "llm": None, "review": None}))
    assert main(["review", str(run_dir / "paper" / "good" / "paper.pdf")]) == 2
    assert "this run used no LLM" in capsys.readouterr().err
