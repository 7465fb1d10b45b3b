"""Content-addressed on-disk cache of completed responses.

The key is the call's identity: the node that asks, the step (the role: proposal, judgement,
critique...) and everything that determines the answer (provider, model id, messages with
images, sampling parameters, requested schema). It deliberately leaves out the attempt counter:
a resume re-runs an interrupted node as a new attempt, and that attempt must find the answers
already paid for. A deliberate retry of a failed step is a new node (a debug child), so it has a
new identity and gets a fresh answer. `mode="replay"` reproduces a run from the cache alone (a
miss is an error, never a silent new call).
Embeddings are cached per text, keyed on provider, model id, requested dimensions and the text,
without the node: a vector is a function of the text alone (no sampling), so any node, and a
resumed run, reuses it, and a batch that adds one text to a bank pays for that text only.
Entries are written to a temp file and renamed, so a crash never leaves a half entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from engine.llm.prices import ResolvedModel
from engine.llm.providers.base import ProviderCall
from engine.llm.types import CachedVector, Completion

M = TypeVar("M", bound=BaseModel)

CACHE_VERSION = 2  # 1 keyed on the attempt counter: its entries are never matched again


def cache_key(call: ProviderCall, node_id: str | None) -> str:
    material: dict[str, Any] = {
        "v": CACHE_VERSION,
        "node": node_id,
        "step": call.role,
        "provider": call.model.provider,
        "model": call.model.model,
        "messages": [m.model_dump(mode="json") for m in call.messages],
        "temperature": call.temperature,
        "max_tokens": call.max_tokens,
        "reasoning_effort": call.reasoning_effort,
        "schema": call.output_schema.model_dump(mode="json", by_alias=True) if call.output_schema else None,
    }
    if call.context:  # what the prompt's first line used to say: two steps may send the same text
        material["context"] = dict(call.context)
    return _digest(material)


def embedding_key(model: ResolvedModel, dimensions: int | None, text: str) -> str:
    return _digest(
        {
            "v": CACHE_VERSION,
            "kind": "embedding",
            "provider": model.provider,
            "model": model.model,
            "dimensions": dimensions,
            "text": text,
        }
    )


def _digest(material: dict[str, Any]) -> str:
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


class ResponseCache:
    def __init__(self, root: Path, mode: Literal["read_write", "replay", "off"] = "read_write") -> None:
        self.root = root
        self.mode = mode

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        return self._read(key, Completion)

    def put(self, key: str, completion: Completion) -> None:
        self._write(key, completion)

    def get_vector(self, key: str) -> CachedVector | None:
        return self._read(key, CachedVector)

    def put_vector(self, key: str, entry: CachedVector) -> None:
        self._write(key, entry)

    def _read(self, key: str, kind: type[M]) -> M | None:
        if self.mode == "off":
            return None
        path = self._path(key)
        try:
            return kind.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValidationError:
            return None  # an entry from an older format: treat as absent, it will be rewritten

    def _write(self, key: str, entry: BaseModel) -> None:
        if self.mode != "read_write":
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(entry.model_dump_json())
        os.replace(tmp, path)
