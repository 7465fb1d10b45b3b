"""The one train/held-out split: exact duplicate rows and `group_column` groups never straddle it,
held-out counts observations rather than copies, and a table of copies is warned about."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from engine import events as ev
from engine.errors import ConfigError
from engine.journal import Journal
from search.discovery.benchmarks import null_table, planted_table, repeated_rows
from search.discovery.claims import render_findings
from search.discovery.data import HELDOUT, TRAIN, make_split


def repeated(copies: int, unique: int = 80, seed: int = 0) -> pd.DataFrame:
    """A null table whose rows are each repeated `copies` times (repeated measures exported flat)."""
    return repeated_rows(null_table(planted_table(seed, n=unique), seed=seed), copies, seed)


def split(
    tmp_path: Path, df: pd.DataFrame, **kw: Any
) -> tuple[pd.DataFrame, pd.DataFrame, ev.DiscoverySplit]:
    tmp_path.mkdir(exist_ok=True)
    data = tmp_path / "t.csv"
    df.to_csv(data, index=False)
    journal = Journal.open(tmp_path / "run")
    try:
        s = make_split(tmp_path / "run", journal, data, fraction=0.3, seed=1, image_column=None, **kw)
        event = next(e for e in journal.log.read(ev.DiscoverySplit))
    finally:
        journal.log.close()
    return pd.read_parquet(s.table(TRAIN)), pd.read_parquet(s.table(HELDOUT)), event


def keys(df: pd.DataFrame) -> set[int]:
    return set(pd.util.hash_pandas_object(df, index=False).tolist())


def test_duplicate_rows_never_straddle_the_split(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    df = repeated(6)
    with caplog.at_level(logging.WARNING, logger="search.discovery.data"):
        train, held, event = split(tmp_path, df)
    assert not keys(train) & keys(held), "a row and its copy ended on both sides of the split"
    assert not held.duplicated().any(), "held-out counts each observation once"
    assert 0.2 < len(held) / 80 < 0.4  # about 30% of the observations
    assert event.duplicate_rows == 400 and event.heldout_duplicates_dropped > 0
    assert "400 of 480 rows are exact duplicates" in (event.warning or "")
    assert "400 of 480 rows are exact duplicates" in caplog.text
    report = render_findings([], {"split": event.model_dump(exclude={"type", "seq"})})
    assert "Warning: 400 of 480 rows are exact duplicates" in report


def test_group_column_keeps_each_group_in_one_part(tmp_path: Path) -> None:
    df = planted_table(3, n=300)
    df["subject"] = np.arange(300) // 5
    train, held, event = split(tmp_path, df, group_column="subject")
    assert not set(train["subject"]) & set(held["subject"])
    assert event.groups == 60 and event.warning == ""


def test_a_table_without_duplicates_splits_by_row_and_warns_nothing(tmp_path: Path) -> None:
    train, held, event = split(tmp_path, planted_table(4, n=200))
    assert (len(train), len(held)) == (140, 60) and event.duplicate_rows == 0 and not event.warning


def test_identical_rows_of_an_all_discrete_table_are_not_copies(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 2, 400), "b": rng.integers(0, 3, 400)})
    train, held, event = split(tmp_path, df)
    assert (len(train), len(held)) == (280, 120) and event.duplicate_rows == 0


def test_unknown_group_column_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="group_column = 'nope'"):
        split(tmp_path, planted_table(5, n=100), group_column="nope")


def test_repeated_null_rows_no_longer_pass_the_two_split_gate(tmp_path: Path) -> None:
    """Every pair of a null table whose rows are each copied 8 times, through the two-split gate:
    with copies on both sides the held-out part replicated train's chance findings."""
    from search.discovery import silva_stats as st
    from search.discovery.evidence import TestOutcome
    from search.discovery.gates import two_split_heldout, two_split_train

    tested = accepted = 0
    for seed in range(4):
        train, held, _ = split(tmp_path / str(seed), repeated(8, unique=75, seed=seed))
        cols = list(train.columns)
        for i, x in enumerate(cols):
            for y in cols[i + 1 :]:
                tested += 1
                ev = TestOutcome.model_validate(st.correlation(train, x, y))
                if not two_split_train(ev, 0, alpha=0.05, min_effect=0.2).passed:
                    continue
                ho = TestOutcome.model_validate(st.correlation(held, x, y))
                accepted += two_split_heldout(ev, ho, 0, alpha=0.05, min_effect=0.2, ratio=0.6).passed
    assert tested == 220
    assert accepted / tested <= 0.05, f"{accepted} of {tested} null pairs accepted"


def subjects_by_visits(
    subjects: int = 100,
    visits: int = 6,
    seed: int = 0,
    columns: tuple[str, ...] = ("weight", "glucose", "sleep"),
) -> pd.DataFrame:
    """Repeated measures that are not copies: each column a per-subject level plus visit noise,
    every column independent of the others (a null table)."""
    rng = np.random.default_rng(seed)
    level = rng.normal(size=(subjects, len(columns)))
    rows = np.repeat(level, visits, axis=0) + 0.5 * rng.normal(size=(subjects * visits, len(columns)))
    df = pd.DataFrame(rows, columns=list(columns))
    df.insert(0, "subject_id", np.repeat([f"S{i:03d}" for i in range(subjects)], visits))
    df["visit"] = np.tile(np.arange(visits), subjects)
    return df.sample(frac=1, random_state=seed).reset_index(drop=True)


def test_a_column_identifying_units_is_found_and_splits_by_unit(tmp_path: Path) -> None:
    train, held, event = split(tmp_path, subjects_by_visits())
    assert event.group_column == "subject_id" and event.groups == 100
    assert "column 'subject_id' identifies units: 600 rows hold 100 values" in (event.warning or "")
    assert not set(train["subject_id"]) & set(held["subject_id"])
    assert len(held) == held["subject_id"].nunique() == 30  # one row per held-out subject


def test_the_heldout_part_counts_groups_when_a_group_column_is_given(tmp_path: Path) -> None:
    df = planted_table(3, n=300)
    df["site"] = np.arange(300) % 50
    _, held, event = split(tmp_path, df, group_column="site")
    assert event.group_column == "site" and not event.warning
    assert len(held) == held["site"].nunique() == 15


def test_identifier_columns_are_told_apart_from_variables() -> None:
    from search.discovery.data import describe, identifier_columns, unit_column

    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "record_id": np.arange(200),  # one per row: an identifier, not a unit of repeats
            "patientID": np.repeat(np.arange(40), 5),
            "code": [f"P-{i % 50:03d}" for i in range(200)],
            "age": rng.integers(20, 80, 200),  # integers with repeats: a variable
            "valid": rng.integers(0, 2, 200),
            "subject": rng.choice(["math", "physics", "art"], 200),  # a category, not a unit
            "width": rng.normal(size=200),
        }
    )
    assert identifier_columns(df) == ["record_id", "patientID", "code"]
    assert unit_column(df) == "code"  # the finest identifier with several rows per value
    text = describe(df)
    assert "- patientID: identifier of units, 40 values (not a variable" in text
    assert "- age: numeric" in text


@pytest.mark.slow
def test_repeated_measures_of_null_units_rarely_pass_the_two_split_gate(tmp_path: Path) -> None:
    """Subjects x visits null tables, every pair of measured columns through the two-split gate:
    split by row, 32 of 560 such pairs passed (20 seeds, 8 columns); by subject with every row of
    a held-out subject, 25; with the found unit column and one row per held-out subject, 6."""
    from search.discovery import silva_stats as st
    from search.discovery.evidence import TestOutcome
    from search.discovery.gates import two_split_heldout, two_split_train

    tested = accepted = 0
    columns = tuple(f"v{i}" for i in range(8))
    for seed in range(10):
        train, held, _ = split(tmp_path / str(seed), subjects_by_visits(seed=seed, columns=columns))
        for i, x in enumerate(columns):
            for y in columns[i + 1 :]:
                tested += 1
                ev = TestOutcome.model_validate(st.correlation(train, x, y))
                if not two_split_train(ev, 0, alpha=0.05, min_effect=0.2).passed:
                    continue
                ho = TestOutcome.model_validate(st.correlation(held, x, y))
                accepted += two_split_heldout(ev, ho, 0, alpha=0.05, min_effect=0.2, ratio=0.6).passed
    assert tested == 280
    assert accepted / tested <= 0.025, f"{accepted} of {tested} null pairs accepted"
