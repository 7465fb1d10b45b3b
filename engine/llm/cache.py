"""Content-addressed on-disk cache of completed responses.

The key is the call's identity: the node that asks, the step (the role: proposal, judgement,
critique...) and everything that determines the answer (provider, model id, messages with
images, sampling parameters, requested schema). It deliberately leaves out the attempt counter:
a resume re-runs an interrupted node as a new attempt, and that attempt must find the answers
already paid for. A deliberate retry of a failed step is a new node (a debug child), so it has a
new identity and gets a fresh answer. `mode="replay"` reproduces a run from the cache alone (a
miss is an error, never a silent new call).
Entries are written to a temp file and renamed, so a crash never leaves a half entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from engine.llm.providers.base import ProviderCall
from engine.llm.types import Completion

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
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


class ResponseCache:
    def __init__(self, root: Path, mode: Literal["read_write", "replay", "off"] = "read_write") -> None:
        self.root = root
        self.mode = mode

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        if self.mode == "off":
            return None
        path = self._path(key)
        try:
            return Completion.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValidationError:
            return None  # an entry from an older format: treat as absent, it will be rewritten

    def put(self, key: str, completion: Completion) -> None:
        if self.mode != "read_write":
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(completion.model_dump_json())
        os.replace(tmp, path)
