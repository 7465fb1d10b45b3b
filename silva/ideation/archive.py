"""The idea archive: `ideas.jsonl`, one record per idea, appended and fsynced the moment the idea
is made (a crash loses none); each kept idea is also a Silva idea file `<name>.yaml` that
`silva run` takes as is. A torn last line (a crash mid-write) is ignored when reading."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from engine.errors import ConfigError
from search.idea import Idea, load_idea

ARCHIVE_FILE = "ideas.jsonl"
Verdict = Literal["novel", "not_novel", "duplicate", "unchecked"]


class Scores(BaseModel):
    interestingness: int = Field(ge=1, le=10)
    novelty: int = Field(ge=1, le=10)
    feasibility: int = Field(ge=1, le=10)

    @property
    def total(self) -> int:
        return self.interestingness + self.novelty + self.feasibility


class NoveltyRound(BaseModel):
    query: str
    papers: list[str] = Field(default_factory=list, description="ids of the papers this query found")


class Novelty(BaseModel):
    verdict: Verdict
    reason: str = ""
    closest: list[str] = Field(default_factory=list, description="ids of the papers the idea is closest to")
    rounds: list[NoveltyRound] = Field(default_factory=list)
    error: str = ""


class IdeaRecord(BaseModel):
    """One archived idea: the idea file's content, its scores, and how it was checked."""

    name: str
    idea: dict[str, Any] = Field(description="a Silva idea file's fields")
    scores: Scores
    status: Verdict
    novelty: Novelty
    papers: list[dict[str, Any]] = Field(
        default_factory=list, description="the papers found, as the provider gave them"
    )
    duplicate_of: str | None = None
    similarity: float | None = None
    parents: list[str] = Field(default_factory=list, description="archived ideas this one mutated")
    template: str | None = None
    idea_file: str | None = Field(
        None, description="the idea file, relative to the archive (kept ideas only)"
    )
    created_at: float = Field(default_factory=time.time)

    @property
    def kept(self) -> bool:
        return self.status == "novel"


class Archive:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / ARCHIVE_FILE
        self.records: list[IdeaRecord] = read_archive(self.path) if self.path.exists() else []

    def names(self) -> set[str]:
        return {r.name for r in self.records}

    def add(self, record: IdeaRecord, idea: Idea) -> IdeaRecord:
        """Write the idea file (kept ideas), then append the record durably."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if record.kept:
            idea_file = self.dir / f"{record.name}.yaml"
            idea_file.write_text(
                yaml.safe_dump(idea.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
            )
            record = record.model_copy(update={"idea_file": idea_file.name})
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(record.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records.append(record)
        return record


def read_archive(path: Path) -> list[IdeaRecord]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found; `silva ideate TOPIC_FILE` writes it") from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(IdeaRecord.model_validate_json(line))
        except ValidationError as e:
            if number == len(lines):  # a last line without its newline: a write cut off by a crash
                continue
            raise ConfigError(
                f"{path}: line {number} is not an idea record: {e.errors()[0]['msg']}"
            ) from None
    return records


def top_ideas(path: Path, k: int | None) -> list[Path]:
    """The idea files of the archive's best `k` kept ideas (all when k is None), by total score."""
    records = [r for r in read_archive(path) if r.kept and r.idea_file]
    if not records:
        raise ConfigError(
            f"{path}: no idea passed the novelty check; nothing to run (see each record's `novelty`)"
        )
    ranked = sorted(records, key=lambda r: (-r.scores.total, r.created_at))
    files = [path.parent / r.idea_file for r in ranked[:k] if r.idea_file]
    for f in files:
        load_idea(f)  # a clear error now rather than at run start
    return files


def ideas_template(path: Path, files: list[Path]) -> Path | None:
    """The template the chosen idea files extend (`silva ideate --template`), or None: a run grows
    every idea from one template's code, so ideas of different templates are not run together."""
    chosen = {f.name for f in files}
    templates = {r.template for r in read_archive(path) if r.idea_file in chosen}
    if len(templates) > 1:
        shown = ", ".join(sorted(t or "(none)" for t in templates))
        raise ConfigError(
            f"{path}: the chosen ideas extend different templates ({shown}); "
            "run each template's ideas with its own archive (silva ideate --out DIR)"
        )
    template = next(iter(templates), None)
    return Path(template) if template else None


def summary_line(record: IdeaRecord) -> str:
    s = record.scores
    return (
        f"{record.name}: {record.status} (interest {s.interestingness}, novelty {s.novelty}, "
        f"feasibility {s.feasibility}) {json.dumps(record.idea.get('title', ''))}"
    )
