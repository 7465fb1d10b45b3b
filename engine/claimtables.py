"""Tables read by structure: the groups are the first column's cells or the header's, the metric
is the header's (or the first cell's, when groups head the columns), "%" in a header scales its
column. Each number is checked against its own row's and column's group and metric: a mean moved
to another group's row is a finding, so is a metric the run never measured, the selection metric
headed "test", a row naming no group of the run, and a pair's row ("A vs. B") whose statistics or
verdict are not that claim's. See docs/review.md, "Integrity checks".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.claimfacts import DENIED_HELD_OUT, HELD_OUT_WORDS, group_numbers, held_out_figure, seed_counts
from engine.claimnames import Resolver
from engine.claimnumbers import fits, literals
from engine.claims import Claim, Ledger


@dataclass(frozen=True)
class RowCheck:
    row: str
    claim: Claim | None
    problems: tuple[str, ...]


# Where `plain` found a float's bounds (a table, figure or centred block): a paragraph break that
# also ends a caption, so that a paragraph after (or before) a float is never read as its caption.
FLOAT_MARK = "\n\f\n"


def blocks(text: str) -> list[tuple[list[str], str]]:
    """Each run of table rows (lines with "&", rules and blank lines between them) with the text
    around it (its caption): three lines either side, within the rows' float where the text marks
    floats."""
    lines = text.split("\n")  # not splitlines(), which would split at the float mark too
    out: list[tuple[list[str], str]] = []
    rows: list[str] = []
    start = 0
    for i, line in enumerate([*lines, "end"]):
        if "&" in line:
            start = start if rows else i
            rows.append(line)
        elif rows and not line.strip() and "\f" not in line:
            continue
        elif rows:
            out.append((rows, " ".join(_within_float(lines[max(0, start - 3) : start], lines[i : i + 3]))))
            rows = []
    return out


def _within_float(before: list[str], after: list[str]) -> list[str]:
    """The lines before and after a table's rows up to its float's bounds."""
    bound = [k for k, line in enumerate(before) if "\f" in line]
    if bound:
        before = before[bound[-1] + 1 :]
    end = next((k for k, line in enumerate(after) if "\f" in line), len(after))
    return before + after[:end]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.split("&")]


def check_table(rows: list[str], caption: str, ledger: Ledger, names: Resolver) -> list[RowCheck]:
    grid = [_cells(r) for r in rows]
    header = grid[0] if not any(literals(c) for c in grid[0][1:]) else None
    body = grid[1:] if header else grid
    by_column = header is not None and sum(bool(names.groups(c)) for c in header[1:]) >= 2
    named_rows = [r for r in body if names.groups(r[0])]
    out = _absent_columns(header, body, names) if by_column and header else []
    for r in body:
        cells = [(r[0], h) for h in header[1:]] if header else [(r[0], "")] * (len(r) - 1)
        problems: list[str] = []
        for (first, head), value in zip(cells, r[1:], strict=False):
            group, metric = (head, first) if by_column else (first, head)
            problems += _cell(group, metric, value, caption, names, ledger)
        if (
            not by_column
            and named_rows
            and not names.groups(r[0])
            and names.unresolved(r[0])
            and literals(" ".join(r[1:]))
        ):
            problems.append(f"row '{r[0]}' names no group of the run (its groups: {'; '.join(names.labels)})")
        pair = _pair(r, names)
        if pair is not None:
            out.append(pair)
        elif problems:
            out.append(RowCheck(" | ".join(r), None, tuple(dict.fromkeys(problems))))
    return out


def _absent_columns(header: list[str], body: list[list[str]], names: Resolver) -> list[RowCheck]:
    """A column headed by a system that is no group of the run, among columns headed by groups."""
    out = []
    for i, head in enumerate(header[1:], start=1):
        figures = literals(" ".join(r[i] for r in body if i < len(r)))
        if figures and not names.groups(head) and names.unresolved(head) and not names.metrics(head):
            groups = "; ".join(names.labels)
            out.append(
                RowCheck(head, None, (f"column '{head}' names no group of the run (its groups: {groups})",))
            )
    return out


def _cell(group: str, metric: str, value: str, caption: str, names: Resolver, ledger: Ledger) -> list[str]:
    """One cell as the sentence "<group>'s <metric> is <value>", read like any statement of fact."""
    if not literals(value) or len(set(names.groups(group))) != 1:
        return []
    if "%" in metric and re.fullmatch(r"\s*[-−]?\d+(?:\.\d+)?\s*", value):
        value += "%"  # a column in percent
    if re.fullmatch(r"\s*(?:n|seeds|runs|replicates)\s*", metric, re.IGNORECASE):
        return seed_counts(f"{value} seeds", ledger)
    statement = f"{group} has {metric.replace('%', '')} {value}"
    problems = group_numbers(statement, names, ledger)
    problems += [f"is under {w}, a metric the run did not measure" for w in names.unmeasured(metric)]
    if HELD_OUT_WORDS.search(DENIED_HELD_OUT.sub(" ", metric + " " + caption)):
        selection = held_out_figure("held-out " + statement, names, ledger)
        if selection is not None:
            problems.append(
                f"shows {selection}, the metric the search selected on, as a held-out test result"
            )
    return problems


def _pair(r: list[str], names: Resolver) -> RowCheck | None:
    """A row about a comparison ("A vs. B & t & df & p & g & verdict"): one of the pair's claims."""
    found = list(dict.fromkeys(g for _, g in names.groups(r[0])))
    if len(found) < 2:
        return None
    pair = names.claims_of(found)
    body = " & ".join(r[1:])
    lits = literals(body)
    verdict = re.search(r"no detectable difference|untested|better|worse", body)
    ok = [
        c
        for c in pair
        if all(fits(x, c) for x in lits) and (verdict is None or verdict.group(0) == c.verdict)
    ]
    if pair and not ok and lits:
        return RowCheck(
            " | ".join(r), pair[0], ("has figures or a verdict that are not those of its row's claim",)
        )
    return RowCheck(" | ".join(r), ok[0] if ok else None, ())
