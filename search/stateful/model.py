"""The investigation state: patterns, investigations with their evidence, the focus, and the
actions an LLM may take on it. Every change is a journal event (`stateful`), and `State` is the
replay of those events, so a resumed run has exactly the state the killed one had.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from engine.events import StatefulOp
from search.discovery.evidence import TestOutcome

Op = Literal["==", "!=", ">", ">=", "<", "<="]
Tool = Literal[
    "correlation", "regression", "compare_groups", "stratified", "interaction", "conditional_independence"
]
ActionName = Literal["create", "attach", "deepen", "switch", "retire", "stop"]
Verdict = Literal["supported", "weakened", "refuted", "inconclusive"]


class Condition(BaseModel):
    """One row filter of a population, e.g. `g == 1`."""

    column: str
    op: Op = "=="
    value: float | str

    def text(self) -> str:
        value = f"{self.value:g}" if isinstance(self.value, float) else self.value
        return f"{self.column} {self.op} {value}"


def population_key(conds: list[Condition]) -> frozenset[str]:
    return frozenset(c.text() for c in conds)


def population_text(conds: list[Condition]) -> str:
    return " and ".join(c.text() for c in conds) or "all rows"


class AnalysisSpec(BaseModel):
    """A test from Silva's statistical tools, run by Silva (no generated code): its variables and
    its population are known exactly, which is what the scope checker compares a claim with."""

    tool: Tool
    outcome: str
    predictor: str
    covariates: list[str] = Field(default_factory=list, max_length=10, description="regression: adjusted for")
    strata: str | None = Field(None, description="stratified: the stratifying column")
    moderator: str | None = Field(None, description="interaction: the column whose level changes the effect")
    population: list[Condition] = Field(default_factory=list, description="rows analysed; empty: all rows")

    @property
    def variables(self) -> set[str]:
        extra = [c for c in (self.strata, self.moderator) if c]
        return {self.outcome, self.predictor, *self.covariates, *extra}

    def brief(self) -> str:
        extra = f" adjusting for {', '.join(self.covariates)}" if self.covariates else ""
        extra += f" within strata of {self.strata}" if self.strata else ""
        extra += f" times {self.moderator}" if self.moderator else ""
        return f"{self.tool}({self.outcome} ~ {self.predictor}{extra}) on {population_text(self.population)}"


class Claim(BaseModel):
    """A structured hypothesis: what it says, about which variables, for which rows, which sign."""

    statement: str = Field(min_length=3, max_length=1000)
    variables: list[str] = Field(default_factory=list, max_length=10)
    population: list[Condition] = Field(default_factory=list)
    expected_sign: Literal[-1, 0, 1] = 0


class Action(BaseModel):
    """One frontier action, as the LLM picks it (its structured output)."""

    action: ActionName
    investigation: str = Field("", description="target investigation id (attach, deepen, switch, retire)")
    claim: Claim | None = Field(None, description="create: the new investigation's claim")
    analysis: AnalysisSpec | None = Field(None, description="create, attach, deepen: the analysis to run")
    pattern: str = Field("", max_length=500, description="optional: a regularity you noticed in the evidence")
    justification: str = Field("", max_length=1000)


class Evidence(BaseModel):
    id: str
    node_id: str
    split: Literal["train", "heldout"]
    role: Literal["primary", "robustness"]
    analysis: AnalysisSpec
    result: TestOutcome | None = None
    error: str = ""


class Judgement(BaseModel):
    verdict: Verdict
    reason: str
    in_scope: list[str] = Field(default_factory=list, description="evidence ids the verdict used")
    scope_problems: list[str] = Field(default_factory=list)
    awaiting_heldout: bool = False  # passed on train; its one held-out confirmation decides


class Investigation(BaseModel):
    id: str
    claim: Claim
    status: Literal["open", "retired"] = "open"
    evidence: list[Evidence] = Field(default_factory=list)
    confirmed: bool = False  # its one held-out confirmation has been run

    def of(self, split: str) -> list[Evidence]:
        return [e for e in self.evidence if e.split == split]


class Pattern(BaseModel):
    """An observed regularity: from the opening screen of the train part, or noted by the LLM."""

    id: str
    text: str
    step: str = ""  # the node that noted it; '' for the screen
    variables: list[str] = Field(default_factory=list)
    strength: float | None = None  # the screen's rank correlation


class State:
    """The replay of the run's `stateful` events."""

    def __init__(self) -> None:
        self.patterns: list[Pattern] = []
        self.investigations: dict[str, Investigation] = {}
        self.focus: str | None = None
        self.stopped: str | None = None  # why the policy stopped, once it has
        self.steps: list[dict[str, Any]] = []  # every step: action, accepted, reason (the chat-free history)
        self.applied: set[str] = set()  # node ids whose outcome is in the state
        self.finalized = False
        self.screened = False

    @classmethod
    def replay(cls, events: Iterable[StatefulOp]) -> State:
        state = cls()
        for e in events:
            state.apply(e)
        return state

    def apply(self, e: StatefulOp) -> None:
        """One event is one whole change (a step's action with its evidence), so a crash between
        two events never leaves half a step applied."""
        if e.node_id:
            self.applied.add(e.node_id)
        match e.op:
            case "step":
                self.steps.append(
                    {"node_id": e.node_id, "action": e.action, "accepted": e.accepted, "reason": e.reason}
                )
                if e.pattern:
                    self.patterns.append(Pattern.model_validate(e.pattern))
                if e.accepted:
                    self._act(e)
            case "evidence":
                if e.investigation is not None and e.evidence is not None:
                    self._add_evidence(e.investigation, e.evidence)
            case "screen":
                self.patterns += [Pattern.model_validate(p) for p in e.patterns]
                self.screened = True
            case "stop":
                self.stopped = e.reason
            case "final":
                self.finalized = True

    def _act(self, e: StatefulOp) -> None:
        action, target = e.action or {}, e.investigation or ""
        if action["action"] == "create":
            self.investigations[target] = Investigation(
                id=target, claim=Claim.model_validate(action["claim"])
            )
            self.focus = target
        if e.evidence:
            self._add_evidence(target, e.evidence)
        if action["action"] == "switch":
            self.focus = target
        elif action["action"] == "retire":
            self.investigations[target].status = "retired"
            self.focus = None if self.focus == target else self.focus
        elif action["action"] == "stop":
            self.stopped = action.get("justification") or "the LLM chose to stop"

    def _add_evidence(self, investigation: str, evidence: dict[str, Any]) -> None:
        inv = self.investigations[investigation]
        inv.evidence.append(Evidence.model_validate(evidence))
        inv.confirmed = inv.confirmed or evidence["split"] == "heldout"

    def open(self) -> list[Investigation]:
        return [i for i in self.investigations.values() if i.status == "open"]
