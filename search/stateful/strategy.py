"""StatefulDiscovery on the engine: each step is a node whose job asks the LLM for one frontier
action and runs its analysis on the train part; each held-out confirmation is a node with no LLM.

The driver applies each finished node to the state by journaling `stateful` events (create,
evidence, judge, focus, retire, pattern, stop, final); `State.replay` of those events is the
state, so a resumed run continues from exactly where the killed one was, and a node whose
result is journaled but not yet applied is applied once on resume. Steps run one at a time (each
depends on the last); confirmations run in parallel with them and with each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.dispatch import Finish
from engine.events import StatefulOp
from engine.journal import Journal
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.node import AttemptResult, BudgetRefusal, Node
from engine.outcome import NodeOutcome
from search.discovery.config import DiscoveryConfig
from search.discovery.data import HELDOUT, TRAIN, describe, load_prior, make_split
from search.discovery.evidence import TestOutcome
from search.discovery.interactions import kinds
from search.stateful.adjudicate import Thresholds, adjudicate, adjudicate_naively
from search.stateful.analysis import run_analysis, screen
from search.stateful.config import StatefulConfig
from search.stateful.followup import Interactions
from search.stateful.model import Action, AnalysisSpec, Evidence, Investigation, Judgement, State
from search.stateful.view import SYSTEM, frontier, step_prompt

STAGE = "stateful"
CLAIMS_FILE = "stateful/claims.json"
NEEDS_ANALYSIS = ("create", "attach", "deepen")


class StepOutcome(NodeOutcome):
    family: Literal["stateful_step"] = "stateful_step"
    action: Action | None = None
    error: str = ""
    evidence: TestOutcome | None = None
    evidence_error: str = ""


class ConfirmOutcome(NodeOutcome):
    family: Literal["stateful_confirm"] = "stateful_confirm"
    investigation: str
    evidence: TestOutcome | None = None
    error: str = ""


@dataclass
class StepJob:
    node_id: str
    attempt: int
    llm: LLM
    role: str
    prompt: str
    allowed: list[tuple[str, str]]
    signs: Mapping[str, int]  # investigation -> its claim's expected sign
    frontier_control: bool
    train_file: Path

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        try:
            action = self.llm.complete(
                [Message.system(SYSTEM), Message.user(self.prompt)],
                role=self.role,
                output_type=Action,
                node_id=self.node_id,
                stage=STAGE,
                attempt=self.attempt,
                context={"stateful": "step"},  # what the call is, for scripted responders only
            )
        except BudgetExceeded as e:
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        except LLMError as e:
            return AttemptResult(
                status="good", outcome=StepOutcome(error=f"no usable action: {str(e)[:500]}")
            )
        if not self.frontier_control and action.action != "stop":  # a fixed create-and-test loop
            action = action.model_copy(update={"action": "create", "investigation": ""})
        error = check_action(action, self.allowed, enforce_frontier=self.frontier_control)
        out = StepOutcome(action=action, error=error)
        if not error and action.action in NEEDS_ANALYSIS and action.analysis is not None:
            sign = action.claim.expected_sign if action.claim else self.signs.get(action.investigation, 0)
            out.evidence, out.evidence_error = run_analysis(action.analysis, self.train_file, sign)
        return AttemptResult(status="good", outcome=out)


def check_action(action: Action, allowed: list[tuple[str, str]], *, enforce_frontier: bool) -> str:
    if (
        enforce_frontier
        and (action.action, action.investigation if action.action not in ("create", "stop") else "")
        not in allowed
    ):
        return f"{action.action} {action.investigation!r} is not on the frontier"
    if action.action == "create" and action.claim is None:
        return "create needs a claim"
    if action.action in NEEDS_ANALYSIS and action.analysis is None:
        return f"{action.action} needs an analysis"
    return ""


@dataclass
class ConfirmJob:
    node_id: str
    attempt: int
    investigation: str
    analysis: AnalysisSpec
    expected_sign: int
    heldout_file: Path

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        evidence, error = run_analysis(self.analysis, self.heldout_file, self.expected_sign)
        return AttemptResult(
            status="good",
            outcome=ConfirmOutcome(investigation=self.investigation, evidence=evidence, error=error),
        )


@dataclass(frozen=True)
class Data:
    train: Path
    heldout: Path
    columns: list[str]
    description: str
    prior: str = ""
    interactions: Interactions | None = None  # the interaction follow-ups the view suggests


class StatefulDiscovery:
    """The search policy (an `engine.dispatch.Strategy`)."""

    def __init__(
        self, cfg: StatefulConfig, thresholds: Thresholds, journal: Journal, data: Data, llm: LLM
    ) -> None:
        self.cfg, self.t, self.journal, self.data, self.llm = cfg, thresholds, journal, data, llm
        self.state = State.replay(journal.log.read(StatefulOp))

    # -- state changes: every one is a journal event, applied through State.apply ------------
    def _record(self, op: str, **data: Any) -> None:
        self.state.apply(self.journal.record(StatefulOp(op=op, **data)))

    def judge(self, inv: Investigation) -> Judgement:
        """The claim's local verdict now (derived from its evidence, never stored apart from it)."""
        if not self.cfg.local_adjudication:
            return adjudicate_naively(inv, self.t)
        return adjudicate(inv, self.t, check_scope=self.cfg.structured_hypotheses)

    def _sync(self) -> None:
        """Apply every finished node not yet in the state, in creation order."""
        for node in self.journal:
            if node.stage != STAGE or node.id in self.state.applied or not node.is_finished:
                continue
            confirm = node.outcome_as(ConfirmOutcome)
            if confirm is not None:
                self._apply_confirm(node, confirm)
            else:
                self._apply_step(
                    node, node.outcome_as(StepOutcome) or StepOutcome(error=node.reason or "step failed")
                )

    def _apply_step(self, node: Node, out: StepOutcome) -> None:
        a, target, evidence, pattern = out.action, "", None, None
        if a is not None and not out.error:
            target = f"i{len(self.state.investigations) + 1}" if a.action == "create" else a.investigation
            if a.action in NEEDS_ANALYSIS and a.analysis is not None:
                inv = self.state.investigations.get(target)
                has_primary = inv is not None and any(e.role == "primary" for e in inv.of("train"))
                evidence = Evidence(
                    id=f"{target}.e{len(inv.evidence) + 1 if inv else 1}",
                    node_id=node.id,
                    split="train",
                    role="robustness" if a.action == "deepen" and has_primary else "primary",
                    analysis=a.analysis,
                    result=out.evidence,
                    error=out.evidence_error,
                ).model_dump(mode="json")
            if a.pattern:
                pattern = {"id": f"p{len(self.state.patterns) + 1}", "text": a.pattern, "step": node.id}
        self._record(
            "step",
            node_id=node.id,
            action=a.model_dump(mode="json") if a else {},
            accepted=not out.error and a is not None,
            reason=out.error,
            investigation=target,
            evidence=evidence,
            pattern=pattern,
        )

    def _apply_confirm(self, node: Node, out: ConfirmOutcome) -> None:
        inv = self.state.investigations[out.investigation]
        ev = Evidence(
            id=f"{inv.id}.h1",
            node_id=node.id,
            split="heldout",
            role="primary",
            analysis=self._main(inv).analysis,
            result=out.evidence,
            error=out.error,
        )
        self._record("evidence", node_id=node.id, investigation=inv.id, evidence=ev.model_dump(mode="json"))

    @staticmethod
    def _main(inv: Investigation) -> Evidence:
        return next(e for e in inv.of("train") if e.role == "primary" and e.result is not None)

    # -- Strategy -------------------------------------------------------------------------
    def _needs_confirmation(self, inv: Investigation) -> bool:
        """Once its line of inquiry is closed, a claim that stands on train gets its one held-out test."""
        closed = inv.status == "retired" or self.state.stopped is not None
        return (
            self.cfg.local_adjudication and closed and not inv.confirmed and self.judge(inv).awaiting_heldout
        )

    def propose(self, slots: int) -> list[Node]:
        if not self.state.screened:
            self._record("screen", patterns=screen(self.data.train, self.cfg.screen))
        self._sync()
        if self.state.stopped is None and len(self.state.steps) >= self.cfg.max_steps:
            self._record("stop", reason=f"step budget of {self.cfg.max_steps} used")
        mine = [n for n in self.journal if n.stage == STAGE]
        pending = {n.params.get("investigation") for n in mine if not n.is_finished}
        out: list[Node] = []
        for inv in self.state.investigations.values():
            if len(out) < slots and inv.id not in pending and self._needs_confirmation(inv):
                out.append(
                    Node(stage=STAGE, kind="confirm", idea="stateful", params={"investigation": inv.id})
                )
        step_running = any(n.kind == "step" and not n.is_finished for n in mine)
        if len(out) < slots and self.state.stopped is None and not step_running:
            out.append(
                Node(stage=STAGE, kind="step", idea="stateful", params={"step": len(self.state.steps) + 1})
            )
        return out

    def job_for(self, node: Node, attempt: int) -> StepJob | ConfirmJob:
        if node.kind == "confirm":
            inv = self.state.investigations[node.params["investigation"]]
            return ConfirmJob(
                node.id, attempt, inv.id, self._main(inv).analysis, inv.claim.expected_sign, self.data.heldout
            )
        allowed = frontier(self.state, self.cfg)
        follow = self.data.interactions
        suggested = (
            follow.suggested(self.state, self.t, check_scope=self.cfg.structured_hypotheses) if follow else []
        )
        prompt = step_prompt(
            self.state, self.cfg, self.t, self.data.columns, self.data.description, self.data.prior, suggested
        )
        signs = {i.id: i.claim.expected_sign for i in self.state.investigations.values()}
        return StepJob(
            node.id,
            attempt,
            self.llm,
            self.cfg.role,
            prompt,
            allowed,
            signs,
            self.cfg.frontier_control,
            self.data.train,
        )

    def finished(self) -> Finish | None:
        self._sync()
        if self.state.stopped is None or any(not n.is_finished for n in self.journal if n.stage == STAGE):
            return None
        if any(self._needs_confirmation(i) for i in self.state.investigations.values()):
            return None
        if not self.state.finalized:  # the verdicts as decided, for readers of the journal
            self._record(
                "final",
                judgements={
                    i.id: self.judge(i).model_dump(mode="json") for i in self.state.investigations.values()
                },
            )
            self.write_claims()
        counts = self.verdict_counts()
        return Finish(
            "complete",
            f"stateful discovery stopped ({self.state.stopped}): "
            + ", ".join(f"{v} {k}" for k, v in counts.items()),
        )

    def write_claims(self) -> Path:
        """`stateful/claims.json`: every claim with its verdict, reason, scope problems and evidence."""
        out = self.journal.log.path.parent / CLAIMS_FILE
        out.parent.mkdir(parents=True, exist_ok=True)
        claims = [
            {
                "id": i.id,
                "status": i.status,
                "claim": i.claim.model_dump(mode="json"),
                **self.judge(i).model_dump(mode="json"),
                "evidence": [
                    {
                        "id": e.id,
                        "split": e.split,
                        "role": e.role,
                        "analysis": e.analysis.brief(),
                        "effect": e.result.effect if e.result else None,
                        "log_p": e.result.log_p if e.result else None,
                        "error": e.error,
                    }
                    for e in i.evidence
                ],
            }
            for i in self.state.investigations.values()
        ]
        out.write_text(
            json.dumps(
                {
                    "counts": self.verdict_counts(),
                    "stopped": self.state.stopped,
                    "patterns": [p.model_dump(mode="json") for p in self.state.patterns],
                    "claims": claims,
                },
                indent=1,
            )
        )
        return out

    def verdict_counts(self) -> dict[str, int]:
        out = {"supported": 0, "weakened": 0, "refuted": 0, "inconclusive": 0}
        for inv in self.state.investigations.values():
            out[self.judge(inv).verdict] += 1
        return out


def build_stateful(
    dcfg: DiscoveryConfig, scfg: StatefulConfig, seed: int, journal: Journal, llm: LLM
) -> StatefulDiscovery:
    """From the discovery mode's section: the same one train/held-out split (recorded once in the
    journal), the train description and the prior; the gates' thresholds."""
    import pandas as pd

    run_dir = journal.log.path.parent
    split = make_split(
        run_dir,
        journal,
        dcfg.data,
        fraction=dcfg.heldout_fraction,
        seed=dcfg.split_seed if dcfg.split_seed is not None else seed,
        image_column=None,
        group_column=dcfg.group_column,
    )
    train = pd.read_parquet(split.table(TRAIN))
    numeric, quantities = kinds(train)
    data = Data(
        train=split.table(TRAIN),
        heldout=split.table(HELDOUT),
        columns=list(train.columns),
        description=describe(train),
        prior=load_prior(dcfg.prior),
        interactions=Interactions(numeric, quantities, dcfg.interactions),
    )
    t = Thresholds(alpha=dcfg.alpha, min_effect=dcfg.min_effect, replication_ratio=dcfg.replication_ratio)
    return StatefulDiscovery(scfg, t, journal, data, llm)
