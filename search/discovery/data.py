"""The dataset of a discovery run: read once, split once into train and held-out with a recorded
seed, and described for prompts from the train part only."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.config import load_yaml
from engine.errors import ConfigError
from engine.events import DiscoverySplit
from engine.journal import Journal

SPLIT_DIR = "discovery"
TRAIN, HELDOUT = "train", "heldout"
MAX_PROMPT_COLUMNS = 60
CODE_LEVELS = 6  # integer columns with at most this many levels are described as discrete codes
DISCRETE_LEVELS = 20  # a column with at most this many distinct values is discrete for the split
DUPLICATE_WARN_FRACTION = 0.05  # warn when this share of rows repeats another row exactly
# A column named like an identifier ("subject_id", "patientID", "user"), or text values that look
# like codes ("S017", "P-3"), names units rather than measuring them.
_ID_NAME = re.compile(
    r"(?i:(?:^|[_\W])(?:id|ids|uuid|guid|subject|participant|patient|person|user|customer|household)"
    r"(?:$|[_\W]))|(?<=[a-z])(?:Id|ID|Ids|IDs)$"
)
_CODE = re.compile(r"^[A-Za-z]{0,6}[-_]?\d+$|^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?")
UNIT_MIN_ROWS = 1.5  # rows per value from which an identifier marks repeated measures
ID_MIN_VALUES = 10  # fewer values name categories ("subject": math, physics), not units

log = logging.getLogger(__name__)


def read_table(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise ConfigError(f"discovery.data = {str(path)!r}: file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            df = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        else:
            raise ConfigError(f"discovery.data = {str(path)!r}: expected a .csv or .parquet file")
    except (ValueError, OSError) as e:
        raise ConfigError(f"discovery.data = {str(path)!r}: cannot read the table: {e}") from None
    if len(df) < 20 or df.shape[1] < 2:
        raise ConfigError(
            f"discovery.data = {str(path)!r}: {len(df)} rows x {df.shape[1]} columns; "
            "discovery needs 20+ rows and 2+ columns"
        )
    df.columns = [str(c) for c in df.columns]
    return df


@dataclass(frozen=True)
class Split:
    """Where the two parts live in the run directory (host paths), and the column whose rows are
    one unit (given as `group_column`, or found by `unit_column`)."""

    root: Path
    group_column: str | None = None

    def table(self, part: str) -> Path:
        return self.root / SPLIT_DIR / f"{part}.parquet"

    def images(self, part: str) -> Path:
        return self.root / SPLIT_DIR / f"{part}_images"


def make_split(
    run_dir: Path,
    journal: Journal,
    data: Path,
    *,
    fraction: float,
    seed: int,
    image_column: str | None,
    group_column: str | None = None,
) -> Split:
    """Split once: a recorded `discovery_split` event makes later calls (resumes) reuse the files.

    Groups never straddle the split (docs/discovery.md, "The split and the held-out rule"): rows
    sharing `group_column`, and exact duplicate rows, go to the same part."""
    done = next(journal.log.read(DiscoverySplit), None)
    if done is not None:
        return Split(run_dir, done.group_column)
    df = read_table(data)
    for name, col in (("image_column", image_column), ("group_column", group_column)):
        if col is not None and col not in df.columns:
            raise ConfigError(
                f"discovery.{name} = {col!r}: no such column in {data}; columns: {list(df.columns)}"
            )
    found = unit_column(df) if group_column is None else None
    group_column = group_column or found
    groups = split_groups(df, group_column)
    held = heldout_mask(groups, fraction, seed)
    dup = duplicate_rows(df)
    parts = {HELDOUT: heldout_part(df, held, groups, group_column is not None, dup, seed), TRAIN: df[~held]}
    warning = " ".join(
        w for w in (unit_warning(df, found), duplicates_warning(dup, len(df), group_column)) if w
    )
    if warning:
        log.warning("%s: %s", data, warning)
    split = Split(run_dir, group_column)
    (run_dir / SPLIT_DIR).mkdir(parents=True, exist_ok=True)
    for part, rows in parts.items():
        rows.reset_index(drop=True).to_parquet(split.table(part), index=False)
        if image_column is not None:
            _copy_images(rows[image_column], data.parent, split.images(part))
    journal.record(
        DiscoverySplit(
            data=str(data),
            sha256=hashlib.sha256(data.read_bytes()).hexdigest(),
            seed=seed,
            heldout_fraction=fraction,
            rows={p: len(r) for p, r in parts.items()},
            columns=list(df.columns),
            image_column=image_column,
            group_column=group_column,
            groups=int(groups.max()) + 1,
            duplicate_rows=dup,
            heldout_duplicates_dropped=int(held.sum()) - len(parts[HELDOUT]),
            warning=warning,
        )
    )
    return split


def heldout_part(
    df: pd.DataFrame, held: np.ndarray, groups: np.ndarray, grouped: bool, dup: int, seed: int
) -> pd.DataFrame:
    """The held-out rows the confirmatory test counts: one seeded row per unit when rows are
    grouped (units, not their repeated rows, are the observations), else one row of each exact
    duplicate (none are dropped from an all-discrete table, where repeats are expected)."""
    rows = df[held]
    if grouped:
        order = np.random.default_rng(seed).permutation(len(rows))
        first = ~pd.Series(groups[held][order]).duplicated().to_numpy()
        return rows.iloc[np.sort(order[first])]
    return rows.drop_duplicates() if dup else rows


def identifier_columns(df: pd.DataFrame) -> list[str]:
    """Columns that name units rather than measure them: an identifier's name, or text values that
    look like codes, with at least `ID_MIN_VALUES` values and no fractional numbers."""
    out = []
    for col in df.columns:
        s = df[col].dropna()
        if s.nunique() < ID_MIN_VALUES or pd.api.types.is_bool_dtype(s) or pd.api.types.is_float_dtype(s):
            continue
        text = not pd.api.types.is_numeric_dtype(s)
        coded = text and s.astype(str).str.fullmatch(_CODE).mean() >= 0.9 and s.nunique() >= 20
        if _ID_NAME.search(col) or coded:
            out.append(col)
    return out


def unit_column(df: pd.DataFrame) -> str | None:
    """The identifier whose values each span several rows (repeated measures: subjects x visits),
    the finest such one; None when every identifier is unique per row or there is none."""
    repeated = [c for c in identifier_columns(df) if len(df) / df[c].nunique() >= UNIT_MIN_ROWS]
    return max(repeated, key=lambda c: df[c].nunique(), default=None)


def unit_warning(df: pd.DataFrame, column: str | None) -> str:
    if column is None:
        return ""
    units = df[column].nunique()
    return (
        f"column {column!r} identifies units: {len(df)} rows hold {units} values, {len(df) / units:.1f} "
        f"rows each on average (repeated measures?). Silva uses it as discovery.group_column: each "
        f"{column!r} stays in one part of the split and the held-out test counts one row per "
        f"{column!r}; set discovery.group_column to confirm it or to name the right column"
    )


def _all_discrete(df: pd.DataFrame) -> bool:
    return all(df[c].nunique() <= DISCRETE_LEVELS for c in df.columns)


def split_groups(df: pd.DataFrame, group_column: str | None) -> np.ndarray:
    """A group id per row: the `group_column`'s value, else one group per distinct row content.

    Exact duplicates of a row with a continuous value are copies of one observation (repeated
    measures exported flat); in an all-discrete table identical rows are expected, so each row
    is its own group there."""
    if group_column is not None:
        return pd.factorize(df[group_column].astype(str))[0]
    if _all_discrete(df):
        return np.arange(len(df))
    return pd.factorize(pd.util.hash_pandas_object(df, index=False))[0]


def duplicate_rows(df: pd.DataFrame) -> int:
    """Rows that repeat an earlier row exactly (0 in an all-discrete table, where repeats are expected)."""
    return 0 if _all_discrete(df) else int(df.duplicated().sum())


def duplicates_warning(dup: int, rows: int, group_column: str | None) -> str:
    if dup < DUPLICATE_WARN_FRACTION * rows:
        return ""
    keep = f"each {group_column!r} in one part" if group_column else "the copies of a row in one part"
    return (
        f"{dup} of {rows} rows are exact duplicates of another row (repeated measures exported flat?): "
        f"train p-values count the copies as independent rows. The split keeps {keep}, and held-out "
        "keeps one row of each; set discovery.group_column when the rows of one subject also differ"
    )


def heldout_mask(groups: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Whole groups, in a seeded random order, go to held-out until it holds `fraction` of the rows."""
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=n_groups)
    order = np.random.default_rng(seed).permutation(n_groups)
    target = max(1, int(round(fraction * len(groups))))
    taken = np.cumsum(sizes[order])
    chosen = order[: int(np.searchsorted(taken, target)) + 1]
    return np.isin(groups, chosen)


def _copy_images(paths: pd.Series, base: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for rel in paths.dropna().astype(str):
        src = (base / rel).resolve()
        if not src.is_file() or base.resolve() not in src.parents:
            raise ConfigError(f"image {rel!r}: not a file under {base}")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)


def describe(df: pd.DataFrame, image_column: str | None = None) -> str:
    """Column names, types and a short summary of the train part, for the proposal prompt."""
    lines = [f"{len(df)} rows (the training part; a held-out part is kept aside and never shown)"]
    ids = identifier_columns(df)
    for col in list(df.columns)[:MAX_PROMPT_COLUMNS]:
        s = df[col]
        missing = f", {int(s.isna().sum())} missing" if s.isna().any() else ""
        if col in ids:
            lines.append(
                f"- {col}: identifier of units, {s.nunique()} values (not a variable: never test it "
                f"against another column; use it only to group rows){missing}"
            )
        elif col == image_column:
            lines.append(f"- {col}: image file paths under data/images/{missing}")
        elif pd.api.types.is_bool_dtype(s) or (pd.api.types.is_numeric_dtype(s) and s.nunique() <= 2):
            counts = s.value_counts().to_dict()
            lines.append(f"- {col}: binary {counts}{missing}")
        elif _integer_codes(s):
            levels = sorted(int(v) for v in s.dropna().unique())
            lines.append(f"- {col}: discrete, {len(levels)} integer-coded levels {levels}{missing}")
        elif pd.api.types.is_numeric_dtype(s):
            lines.append(
                f"- {col}: numeric, mean {s.mean():.3g}, sd {s.std():.3g}, "
                f"range [{s.min():.3g}, {s.max():.3g}]{missing}"
            )
        else:
            top = s.astype(str).value_counts().head(6).to_dict()
            lines.append(f"- {col}: categorical, {s.nunique()} levels, most common {top}{missing}")
    if df.shape[1] > MAX_PROMPT_COLUMNS:
        lines.append(f"... and {df.shape[1] - MAX_PROMPT_COLUMNS} more columns")
    return "\n".join(lines)


def _integer_codes(s: pd.Series) -> bool:
    """Whole numbers with few levels: states or categories coded as integers, not a quantity."""
    if not pd.api.types.is_numeric_dtype(s) or s.nunique() > CODE_LEVELS:
        return False
    values = s.dropna().to_numpy(dtype=float)
    return bool(np.all(values == np.round(values)))


def load_prior(path: Path | None) -> str:
    """The prior information as text for prompts: none, known facts, or a focus question."""
    if path is None:
        return ""
    if not path.is_file():
        raise ConfigError(f"discovery.prior = {str(path)!r}: file not found")
    if path.suffix.lower() in (".yaml", ".yml"):
        data = load_yaml(path) or {}  # a key written twice is refused, as in every Silva YAML
        if not isinstance(data, dict) or not set(data) <= {"question", "facts"}:
            raise ConfigError(f"discovery.prior = {str(path)!r}: expected `question:` and/or `facts: [...]`")
        parts = [f"Focus question: {data['question']}"] if data.get("question") else []
        parts += [f"Known fact: {f}" for f in data.get("facts") or []]
        return "\n".join(parts)
    return path.read_text().strip()
