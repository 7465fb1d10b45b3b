"""What a node's LLM step is asked, fixed when first built.

A prompt is built from the journal: the stage's other nodes, the settings tried so far, the
proposals being written beside it. Rebuilt after a crash or a lost worker, it would list nodes
that finished meanwhile, miss the response cache (keyed by the request's content) and pay the
call again. So the first build is kept in `RUN_DIR/prompts/<node>.<step>.json` and every later
attempt of that step asks exactly the same; users can read there what each node was asked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

PROMPTS_DIR = "prompts"


class Asked(BaseModel):
    """The parts of a step's request that depend on the state of the run when it was built."""

    prompt: str = ""
    tried: list[str] = Field(default_factory=list, description="claims the prompt lists as tried")
    tuning_history: str = ""


def asked(run_dir: Path, node_id: str, step: str, build: Callable[[], Asked]) -> Asked:
    path = run_dir / PROMPTS_DIR / f"{node_id}.{step}.json"
    try:
        return Asked.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        pass
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written like the response cache's entries (which it must outlive): whole, then renamed.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(value.model_dump_json())
    os.replace(tmp, path)
    return value
