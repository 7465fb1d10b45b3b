"""An offline stand-in for the LLM of StatefulDiscovery, answered through the scripted provider.

It reads the JSON block of each step prompt and works through the patterns like a diligent
analyst: one investigation per pattern (a correlation in the pattern's direction), a robustness
analysis adjusting for the variables that co-occur in patterns with both (possible confounders)
when the claim looks promising, then retire; an interaction the view suggests is taken before the next
pattern (tested once, then retired); stop when every pattern was investigated. With
probability `overreach` (seeded by the pattern's variables) its claim says more than its analysis: it claims
the effect holds "independently of" the confounders its first analysis never used.
With frontier control off (a plain history) it simply tests the next untested pattern.

    ScriptedProvider("offline", fn=StatefulScientist(overreach=0.3))
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import last_user_text
from search.stateful.view import HISTORY_HEADER, STATE_HEADER


class StatefulScientist:
    def __init__(self, overreach: float = 0.3) -> None:
        self.overreach = overreach

    def __call__(self, call: ProviderCall) -> str:
        text = last_user_text(call.messages)
        if "stateful" not in call.context:
            return json.dumps({"action": "stop", "justification": "not a stateful-discovery prompt"})
        if STATE_HEADER in text:
            return json.dumps(self._frontier_step(_block(text, STATE_HEADER)))
        history = _block(text, HISTORY_HEADER)
        done = {
            frozenset((t["analysis"] or {}).get(k) for k in ("outcome", "predictor"))
            for t in history["tested"]
        }
        todo = [p for p in history["patterns"] if frozenset(p["variables"]) not in done]
        return json.dumps(
            self._create(todo[0], history["patterns"])
            if todo
            else {"action": "stop", "justification": "every pattern tested"}
        )

    def _frontier_step(self, view: dict[str, Any]) -> dict[str, Any]:
        allowed = {(f["action"], f["investigation"]) for f in view["frontier"]}
        focus = next((i for i in view["investigations"] if i["focus"] and i["status"] == "open"), None)
        if focus is not None:
            ev = focus["evidence"]
            if (
                len(ev) == 1
                and focus["standing"] == "promising on train"
                and ("deepen", focus["id"]) in allowed
                and ev[0]["analysis"]["tool"] != "interaction"
            ):
                primary = ev[0]["analysis"]
                covs = _confounders(primary["predictor"], primary["outcome"], view["patterns"])
                if covs:
                    return {
                        "action": "deepen",
                        "investigation": focus["id"],
                        "analysis": {
                            "tool": "regression",
                            "outcome": primary["outcome"],
                            "predictor": primary["predictor"],
                            "covariates": covs,
                            "population": primary["population"],
                        },
                        "justification": f"does it survive adjusting for {covs}?",
                    }
            return {"action": "retire", "investigation": focus["id"], "justification": "this line is done"}
        if view.get("suggested") and ("create", "") in allowed:
            s = view["suggested"][0]
            return {"action": "create", **{k: s[k] for k in ("claim", "analysis")}, "justification": s["why"]}
        # Read from the statements: without structured claims they are all there is.
        statements = [i["claim"]["statement"].split(",")[0].split() for i in view["investigations"]]
        todo = [
            p for p in view["patterns"] if not any(set(p["variables"]) <= set(words) for words in statements)
        ]
        if todo and ("create", "") in allowed:
            return self._create(todo[0], view["patterns"])
        return {"action": "stop", "justification": "every pattern has been investigated"}

    def _create(self, pattern: dict[str, Any], patterns: list[dict[str, Any]]) -> dict[str, Any]:
        x, y = pattern["variables"]
        sign = 1 if (pattern.get("strength") or 0) >= 0 else -1
        covs = _confounders(x, y, patterns)
        variables, tail = [x, y], ""
        # Whether a claim over-reaches is a property of its pattern (seeded by its two variables),
        # so rewording the prompt's instructions does not change which claims do.
        rng = random.Random(hashlib.sha256(f"{x}|{y}".encode()).hexdigest())
        if covs and rng.random() < self.overreach:
            variables, tail = [x, y, *covs], f", independently of {', '.join(covs)}"
        return {
            "action": "create",
            "claim": {
                "statement": f"higher {x} goes with {'higher' if sign > 0 else 'lower'} {y}{tail}",
                "variables": variables,
                "population": [],
                "expected_sign": sign,
            },
            "analysis": {"tool": "correlation", "outcome": y, "predictor": x, "population": []},
            "pattern": "",
            "justification": f"pattern {pattern['id']}: {pattern['text']}",
        }


def _confounders(x: str, y: str, patterns: list[dict[str, Any]]) -> list[str]:
    """Variables linked by some pattern to both x and y."""
    links: dict[str, set[str]] = {}
    for p in patterns:
        a, b = p["variables"]
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    return sorted((links.get(x, set()) & links.get(y, set())) - {x, y})


def _block(text: str, header: str) -> Any:
    return json.loads(text.split(header, 1)[1].strip().splitlines()[0])


# `scripted_fn: search.stateful.scripted:respond` (what `silva discover --mode stateful` uses offline).
respond = StatefulScientist()
