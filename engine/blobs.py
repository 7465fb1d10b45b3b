"""Large payloads of a run (code, plans, output tails) in content-addressed files, read on demand.

The journal's writer stores a payload field of MIN_CHARS or more once, in
`RUN_DIR/blobs/<sha256[:2]>/<sha256>`, and the event carries a reference in its place
(`"\\x00blob:<sha256>"`): the event log and the replayed nodes stay small, and a 100k-node run
does not hold every node's code and output in memory. The file is written whole, fsynced and
renamed into place (and its folder fsynced) before the event that names it is written, so an
event on disk never names a blob that is not.

Readers see the text, never the reference: a payload field (`lazy_text`) resolves its
reference when read, `model_dump` does the same (the `Text` annotation), and `inline` does it
for raw events. A blob is found in the blob folders of the runs this process opened
(`register`); its content is checked against its name when read. Runs written before blobs
(inline payloads, event formats 1 and 2) are read as they are: a plain string is its own text.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, PlainSerializer

from engine.errors import ConfigError

BLOBS_DIR = "blobs"
MARK = "\x00blob:"
REF_CHARS = len(MARK) + 64
MIN_CHARS = 512  # shorter payloads stay in the event: a file costs a disk block and an fsync
_stores: list[Path] = []  # blob folders of the runs opened in this process, newest first


class BlobMissing(ConfigError):
    """An event names a payload whose file is missing or damaged."""


def is_ref(value: object) -> bool:
    return isinstance(value, str) and len(value) == REF_CHARS and value.startswith(MARK)


def register(run_dir: Path) -> None:
    """Make a run's blobs readable by the payload fields of its nodes."""
    folder = (run_dir / BLOBS_DIR).resolve()
    if folder in _stores:
        _stores.remove(folder)
    _stores.insert(0, folder)


@lru_cache(maxsize=1024)
def _load(digest: str) -> str:
    for folder in _stores:
        try:
            data = (folder / digest[:2] / digest).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise BlobMissing(f"{folder / digest[:2] / digest}: cannot read ({e.strerror})") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise BlobMissing(
                f"{folder / digest[:2] / digest}: its content does not match its name (damaged)"
            )
        return data.decode()
    raise BlobMissing(
        f"payload {digest} is in none of the blob folders of the runs opened here "
        f"({', '.join(map(str, _stores)) or 'none'}); was {BLOBS_DIR}/ left behind in a copy?"
    )


def resolve(value: str) -> str:
    """The text a payload field holds: itself, or the blob it names."""
    return _load(value[len(MARK) :]) if is_ref(value) else value


Text = Annotated[str, PlainSerializer(resolve, return_type=str)]  # dumped as its text, never as a reference


class LazyText:
    """A payload field of a model: holds text or a blob reference, reads as text."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name]
        return resolve(value) if isinstance(value, str) else value

    def __set__(self, obj: Any, value: Any) -> None:  # a data descriptor: it is asked before __dict__
        obj.__dict__[self.name] = value


LAZY: dict[type, tuple[str, ...]] = {}  # model class -> its payload fields


def lazy_text(cls: type[BaseModel], *names: str) -> None:
    """Make these `Text` fields of `cls` payload fields: stored as blobs when large."""
    for name in names:
        setattr(cls, name, LazyText(name))
    LAZY[cls] = names


def raw(model: BaseModel, name: str) -> Any:
    """A field's stored value (a blob reference stays one): for copying without reading."""
    return model.__dict__[name]


class BlobWriter:
    """Writes a run's blobs; `put` returns the reference an event carries instead of the text."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / BLOBS_DIR
        register(run_dir)

    def put(self, text: str) -> str:
        data = text.encode()
        digest = hashlib.sha256(data).hexdigest()
        folder = self.dir / digest[:2]
        path = folder / digest
        if not path.exists():  # content-addressed: the same payload is stored once
            new_folder = not folder.is_dir()
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{digest}.{os.getpid()}.tmp"
            with tmp.open("wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(folder)
            if new_folder:
                _fsync_dir(self.dir)
                _fsync_dir(self.dir.parent)
        return MARK + digest

    def dump(self, model: BaseModel) -> dict[str, Any]:
        """`model.model_dump(mode="json")` with its large payload fields stored as blobs."""
        data = model.model_dump(mode="json")
        self._externalize(model, data)
        return data

    def _externalize(self, model: BaseModel, data: dict[str, Any]) -> None:
        lazy = LAZY.get(type(model), ())
        for name, value in model.__dict__.items():
            if name in lazy and isinstance(value, str):
                if is_ref(value):
                    data[name] = value  # read from the journal: already stored
                elif len(value) >= MIN_CHARS or value.startswith(MARK):
                    data[name] = self.put(value)
            elif isinstance(value, BaseModel):
                self._externalize(value, data[name])
            elif isinstance(value, list):
                for v, d in zip(value, data[name]):
                    if isinstance(v, BaseModel):
                        self._externalize(v, d)
            elif isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(v, BaseModel):
                        self._externalize(v, data[name][k])


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def inline(value: Any) -> Any:
    """A raw event (or part of one) with every blob reference replaced by its text."""
    if isinstance(value, str):
        return resolve(value)
    if isinstance(value, dict):
        return {k: inline(v) for k, v in value.items()}
    if isinstance(value, list):
        return [inline(v) for v in value]
    return value
