"""An offline stand-in for the LLM agent, answered through the scripted provider.

It reads the JSON data block of each Auto-Bench prompt and answers like a careful but limited
model: it integrates only the last `memory` observations (long histories are where real models
degrade), probes the nodes it does not remember probing, and with probability `slip` flips one
entry of its matrix (which may make it invalid: a cycle, or an asymmetric friendship). Every
draw is seeded by a hash of the prompt, so the same prompt always gets the same answer.

    ScriptedProvider("offline", fn=ScriptedScientist(memory=8, slip=0.05))
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import last_user_text
from search.autobench.agents import integrate
from search.autobench.envs import Observation

DATA_HEADER = "Data (JSON):"


class ScriptedScientist:
    def __init__(self, memory: int = 8, slip: float = 0.05) -> None:
        self.memory, self.slip = memory, slip

    def __call__(self, call: ProviderCall) -> str:
        text = last_user_text(call.messages)
        task = call.context.get("autobench")
        if task is None:
            return json.dumps(
                {"adjacency": [], "intervention": -1, "justification": "not an Auto-Bench prompt"}
            )
        data = _data(text)
        rng = random.Random(hashlib.sha256(text.encode()).hexdigest())
        n, kind = int(data["n"]), str(data["kind"])
        seen = [
            Observation(node=o["node"], before=[0] * n, after=[int(i in o["changed"]) for i in range(n)])
            for o in data["observations"]
        ][-self.memory :]
        adj = integrate(seen, n, kind)  # type: ignore[arg-type]
        if rng.random() < self.slip and n > 1:
            i, j = rng.sample(range(n), 2)
            adj[i][j] = 1 - adj[i][j]
        if task == "tracking":
            return json.dumps({"adjacency": adj, "justification": f"integrated the last {len(seen)} steps"})
        probed = {o.node for o in seen}
        target = next((i for i in range(n) if i not in probed), rng.randrange(n))
        return json.dumps(
            {
                "adjacency": adj,
                "intervention": target,
                "justification": f"rows from {len(seen)} remembered observations; {target} not yet probed",
            }
        )


def _data(text: str) -> dict[str, Any]:
    block = text.split(DATA_HEADER, 1)[1].strip().splitlines()[0]
    data: dict[str, Any] = json.loads(block)
    return data
