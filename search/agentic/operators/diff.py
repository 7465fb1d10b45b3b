"""Apply a unified diff an LLM wrote to the parent's file.

LLM diffs are often slightly off: wrong line numbers in the hunk headers, a blank context line
without its leading space, trailing whitespace. Hunks are therefore located by their content
(the nearest exact match to the stated position, then a match ignoring trailing whitespace),
never by the numbers alone. Anything that still does not fit raises `DiffError`, and the caller
falls back to a whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(ValueError):
    """The diff is malformed or does not match the file; the message says which hunk and why."""


@dataclass
class Hunk:
    old_start: int  # 1-based, as written in the header
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)


def parse_hunks(diff: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    current: Hunk | None = None
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if m:
            current = Hunk(old_start=int(m.group(1)))
            hunks.append(current)
            continue
        if current is None or line.startswith(("--- ", "+++ ")) and not current.old and not current.new:
            continue  # file headers, `diff --git`, `index` lines before the first hunk
        if line.startswith("\\"):
            continue  # "\ No newline at end of file"
        tag, body = (line[0], line[1:]) if line else (" ", "")
        if tag == " ":
            current.old.append(body)
            current.new.append(body)
        elif tag == "-":
            current.old.append(body)
        elif tag == "+":
            current.new.append(body)
        else:
            # A context line whose leading space was lost: treat it as context.
            current.old.append(line)
            current.new.append(line)
    if not hunks:
        raise DiffError("no hunks found (expected lines starting with '@@ -a,b +c,d @@')")
    return hunks


def _find(lines: list[str], needle: list[str], hint: int, strip: bool) -> int | None:
    if not needle:
        return min(max(hint, 0), len(lines))
    norm = (lambda s: s.rstrip()) if strip else (lambda s: s)
    target = [norm(s) for s in needle]
    starts = [
        i
        for i in range(len(lines) - len(needle) + 1)
        if norm(lines[i]) == target[0] and [norm(s) for s in lines[i : i + len(needle)]] == target
    ]
    return min(starts, key=lambda i: abs(i - hint)) if starts else None


def apply_unified_diff(original: str, diff: str) -> str:
    lines = original.splitlines()
    offset = 0
    for k, hunk in enumerate(parse_hunks(diff), start=1):
        hint = hunk.old_start - 1 + offset
        at = _find(lines, hunk.old, hint, strip=False)
        if at is None:
            at = _find(lines, hunk.old, hint, strip=True)
        if at is None:
            first = next((s for s in hunk.old if s.strip()), "")
            raise DiffError(
                f"hunk {k} does not match the file (its context starting {first.strip()[:80]!r} is not there)"
            )
        lines[at : at + len(hunk.old)] = hunk.new
        offset += len(hunk.new) - len(hunk.old)
    return "\n".join(lines) + ("\n" if original.endswith("\n") or not original else "")
