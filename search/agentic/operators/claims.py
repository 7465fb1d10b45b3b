"""Tried hyperparameter settings and ablations: claimed once per stage, never repeated.

Several workers may ask the LLM for a new setting at the same moment, before any of them has a
result in the journal. A claim is a file created with O_EXCL under the run directory (shared
storage), so exactly one node wins a given setting; the loser's proposal fails validation and
the LLM is re-asked with the reason. A node's own claim stays valid for its later attempts, and
a claim outlives a failed attempt: a setting that was tried and crashed counts as tried. Claims
of discarded nodes (speculative work grown from a node that was not decided best) are void: the
setting was tried on other code, so it is free again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLAIMS_DIR = "claims"


def canonical_setting(setting: dict[str, Any]) -> str:
    return json.dumps(setting, sort_keys=True, default=str)


def canonical_ablation(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@dataclass(frozen=True)
class ClaimBook:
    """The claims of one (idea, stage, kind): `kind` is 'hyperparameter' or 'ablation'."""

    run_dir: Path
    idea: str
    stage: str
    kind: str
    void: frozenset[str] = field(default_factory=frozenset)  # discarded nodes: their claims do not count
    listed: frozenset[str] = field(default_factory=frozenset)  # keys the asking node's prompt listed as tried

    @property
    def folder(self) -> Path:
        return self.run_dir / CLAIMS_DIR / self.idea / self.stage / self.kind

    def claim(self, key: str, node_id: str) -> str | None:
        """None when `node_id` now owns `key`; otherwise the id of the node that already does."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".json")
        while True:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                try:
                    owner = json.loads(path.read_text() or "{}").get("node_id", "?")
                except FileNotFoundError:
                    continue  # a void claim being set aside right now: try again
                if owner not in self.void:
                    return None if owner == node_id else owner
                try:  # the rename is atomic: of several nodes taking over a void claim, one wins
                    path.rename(path.with_suffix(f".void-{owner}"))
                except FileNotFoundError:
                    pass
        with os.fdopen(fd, "w") as f:
            json.dump({"node_id": node_id, "key": key}, f)
        return None

    def tried(self) -> list[tuple[str, str]]:
        """(node id, key) of every claim so far, oldest first."""
        if not self.folder.is_dir():
            return []
        out = []
        for path in sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # a claim being written right now: its node will show in the next prompt
            if data.get("node_id", "?") not in self.void:
                out.append((data.get("node_id", "?"), data.get("key", "")))
        return out
