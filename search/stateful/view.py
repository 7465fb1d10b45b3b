"""What the LLM sees each step: a structured view of the state and the frontier of actions it may
take (never a chat history, and never a held-out number), or, with frontier control off, a plain
history of earlier claims."""

from __future__ import annotations

import json
from typing import Any

from search.stateful.adjudicate import Thresholds, train_status
from search.stateful.config import StatefulConfig
from search.stateful.model import State

STATE_HEADER, HISTORY_HEADER = "State (JSON):", "History (JSON):"
SYSTEM = (
    "You are a careful data scientist running an investigation on a table. You keep no memory "
    "between steps: the state you are shown is the whole record. Each step you pick one action "
    "from the frontier. Claims must not say more than their analyses show: name exactly the "
    "variables and the rows (population) your analysis used."
)
TOOLS = (
    "Analyses (field `analysis`): tool = correlation | regression | compare_groups | stratified | "
    "interaction | conditional_independence; outcome, predictor (compare_groups: predictor is a two-level "
    "group column), covariates (regression, interaction; conditional_independence: the columns given), "
    "strata (stratified), moderator (interaction: predictor x moderator), population = list of "
    "{column, op, value} row filters (empty: all rows). Test discrete (integer-coded) columns with "
    "conditional_independence, not as linear predictors."
)
ACTIONS = (
    "Actions: create (a new investigation: `claim` {statement, variables, population, expected_sign} and its "
    "first `analysis`), attach (another primary analysis to `investigation`), deepen (a robustness analysis "
    "of `investigation`: add covariates or strata, same population), switch (focus on `investigation`), "
    "retire (close `investigation`; its claim is then adjudicated), stop (end the run)."
)


def frontier(state: State, cfg: StatefulConfig) -> list[tuple[str, str]]:
    """The (action, investigation) pairs allowed now; '' where an action takes no investigation."""
    out: list[tuple[str, str]] = []
    if len(state.investigations) < cfg.max_investigations:
        out.append(("create", ""))
    for inv in state.open():
        if len(inv.evidence) < cfg.max_evidence:
            out.append(("attach", inv.id))
            if inv.of("train"):
                out.append(("deepen", inv.id))
        if inv.id != state.focus:
            out.append(("switch", inv.id))
        out.append(("retire", inv.id))
    out.append(("stop", ""))
    return out


def state_view(
    state: State, cfg: StatefulConfig, t: Thresholds, columns: list[str], suggested: list[dict[str, Any]]
) -> dict[str, Any]:
    invs = []
    for inv in state.investigations.values():
        claim = (
            inv.claim.model_dump(mode="json")
            if cfg.structured_hypotheses
            else {"statement": inv.claim.statement}
        )
        invs.append(
            {
                "id": inv.id,
                "status": inv.status,
                "focus": inv.id == state.focus,
                "claim": claim,
                "standing": train_status(inv, t, check_scope=cfg.structured_hypotheses),
                "evidence": [
                    {
                        "id": e.id,
                        "role": e.role,
                        "analysis": e.analysis.model_dump(mode="json"),
                        **(
                            {
                                "effect": round(e.result.effect, 4),
                                "log_p": round(e.result.log_p, 3),
                                "n": e.result.n,
                            }
                            if e.result
                            else {"error": e.error}
                        ),
                    }
                    for e in inv.of("train")
                ],
            }
        )
    return {
        "columns": columns,
        "patterns": [p.model_dump(mode="json") for p in state.patterns],
        "focus": state.focus,
        "investigations": invs,
        "frontier": [{"action": a, "investigation": i} for a, i in frontier(state, cfg)],
        "suggested": suggested,
    }


def step_prompt(
    state: State,
    cfg: StatefulConfig,
    t: Thresholds,
    columns: list[str],
    dataset: str,
    prior: str,
    suggested: list[dict[str, Any]] | None = None,
) -> str:
    step = len(state.steps) + 1
    head = [f"Step {step} of at most {cfg.max_steps}.", f"## Dataset\n{dataset}"]
    if prior:
        head.append(f"## Prior information\n{prior}")
    if not cfg.frontier_control:
        tested = [
            {
                "statement": (s["action"].get("claim") or {}).get("statement", ""),
                "analysis": s["action"].get("analysis"),
            }
            for s in state.steps
            if s["action"]
        ]
        history = {
            "columns": columns,
            "patterns": [p.model_dump(mode="json") for p in state.patterns],
            "tested": tested,
        }
        return "\n\n".join(
            [
                *head,
                TOOLS,
                "Propose and test ONE new claim (action: create), or stop.",
                f"{HISTORY_HEADER}\n{json.dumps(history)}",
                _answer(),
            ]
        )
    view = state_view(state, cfg, t, columns, suggested or [])
    return "\n\n".join(
        [
            *head,
            TOOLS,
            ACTIONS,
            f"{STATE_HEADER}\n{json.dumps(view)}",
            "Pick one action from `frontier`. `suggested` holds follow-ups Silva proposes (the "
            "interaction of two main effects that stand on train on one outcome), each a ready "
            "`create`: claim and analysis.",
            _answer(),
        ]
    )


def _answer() -> str:
    return (
        'Answer with JSON: {"action": ..., "investigation": "", "claim": {...} or null, '
        '"analysis": {...} or null, "pattern": "", "justification": "..."}'
    )
