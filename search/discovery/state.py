"""The discovery loop's state, replayed from the journal (incrementally: each call consumes only
the events appended since the last one). Nothing here is stored anywhere else, so a resumed run
has exactly the state the killed one had journaled.

Discovery events (beside the engine's node events) are declared in engine/events.py:
`discovery_split`, `discovery_evaluated` (the outcome itself is the node's typed
`DiscoveryOutcome`), `gate_decision` (stages train / heldout / chain / bh / confirm / duplicate /
confound / covariate / control), `chain_ended`, `bank_updated` and `discovery_finished`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.events import (
    BankUpdated,
    ChainEnded,
    DiscoveryEvaluated,
    DiscoveryFinished,
    DiscoverySplit,
    Event,
    GateDecided,
    NodeCreated,
)
from engine.journal import Journal
from engine.node import Node
from search.discovery.checks import CHECK_KINDS, CheckResult
from search.discovery.evidence import ClaimStatus, Hypothesis, TestOutcome
from search.discovery.gates import GateDecision
from search.discovery.job import PROPOSING_KINDS, DiscoveryOutcome
from search.discovery.prompts import Reflection

DISCOVERY_KINDS = (*PROPOSING_KINDS, "heldout", "reflect", *CHECK_KINDS)


@dataclass
class Record:
    """One hypothesis-like node (hypothesis, seed, refine) as the loop knows it."""

    id: str
    kind: str
    created_seq: int
    iteration: int
    parent: str | None
    chain: str | None
    step: int
    hypothesis: Hypothesis | None = None
    evidence: TestOutcome | None = None
    error: str = ""
    figure_reading: str = ""
    eval_seq: int | None = None
    decisions: list[tuple[int, str, GateDecision]] = field(default_factory=list)  # (seq, stage, decision)
    heldout_node: str | None = None
    heldout: TestOutcome | None = None
    heldout_done: bool = False
    check_nodes: dict[str, str] = field(default_factory=dict)  # adjustment / control -> node id
    checks: dict[str, list[CheckResult]] = field(default_factory=dict)  # their results, once finished

    @property
    def evaluated(self) -> bool:
        return self.eval_seq is not None

    def last(self, *stages: str) -> GateDecision | None:
        found = [d for _, s, d in self.decisions if not stages or s in stages]
        return found[-1] if found else None

    @property
    def status(self) -> ClaimStatus:
        d = self.last()
        return d.status if d is not None else "proposed"

    def train_verdict(self, before_seq: int) -> str:
        """What a prompt may say about the gate: train-side decisions made before `before_seq` only."""
        seen = [
            d for seq, s, d in self.decisions if seq < before_seq and s in ("train", "chain", "duplicate")
        ]
        if not seen:
            return "no test result" if self.evaluated and self.evidence is None else "not decided yet"
        d = seen[-1]
        if d.status == "inconclusive":
            return "no test result"
        if d.status == "duplicate":
            return d.reason
        return "passed the train gate" if d.passed else f"failed the train gate ({d.reason})"


@dataclass
class ReflectionRecord:
    node_id: str
    index: int
    seq: int
    reflection: Reflection | None


class DiscoveryState:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.records: dict[str, Record] = {}
        self.heldout_of: dict[str, str] = {}  # held-out node id -> hypothesis id
        self.check_of: dict[str, str] = {}  # adjustment / control node id -> hypothesis id
        self.reflect_nodes: list[str] = []
        self.reflections: list[ReflectionRecord] = []
        self.chains: dict[str, list[str]] = {}  # seed id -> step ids in order
        self.ended_chains: dict[str, str | None] = {}  # seed id -> best step id
        self.bank_history: list[tuple[int, list[str]]] = []
        self.evaluated: set[str] = set()  # every discovery node whose outcome is journaled
        self.split: DiscoverySplit | None = None
        self.finished: DiscoveryFinished | None = None
        self.bh_done = False
        self._offset = 0
        self.sync()

    # -- replay ---------------------------------------------------------------------------------
    def sync(self) -> None:
        for e in self.journal.log.read(start=self._offset):  # streamed from the file
            self._apply(e)
            self._offset += 1

    def _apply(self, e: Event) -> None:
        match e:
            case NodeCreated(node=node) if node.kind in DISCOVERY_KINDS:
                self._created(node, e.seq)
            case DiscoverySplit():
                self.split = e
            case DiscoveryEvaluated():
                self._evaluated(e)
            case GateDecided():
                rec = self.records[e.node_id]
                rec.decisions.append((e.seq, e.stage, GateDecision.model_validate(e.decision)))
                if e.stage == "bh":
                    self.bh_done = True
            case ChainEnded():
                self.ended_chains[e.chain] = e.best
            case BankUpdated():
                self.bank_history.append((e.seq, list(e.bank)))
            case DiscoveryFinished():
                self.finished = e

    def _created(self, node: Node, seq: int) -> None:
        p = node.params
        if node.kind == "heldout":
            parent = node.parent_id or ""  # a held-out run always re-runs a proposal
            self.heldout_of[node.id] = parent
            self.records[parent].heldout_node = node.id
        elif node.kind in CHECK_KINDS:
            parent = node.parent_id or ""  # a check always checks a proposal
            self.check_of[node.id] = parent
            self.records[parent].check_nodes[node.kind] = node.id
        elif node.kind == "reflect":
            self.reflect_nodes.append(node.id)
        else:
            rec = Record(
                id=node.id,
                kind=node.kind,
                created_seq=seq,
                iteration=int(p.get("iteration", 0)),
                parent=node.parent_id,
                step=int(p.get("step", 1)),
                chain=node.id if node.kind == "seed" else p.get("chain"),
            )
            self.records[rec.id] = rec
            if rec.chain is not None:
                self.chains.setdefault(rec.chain, []).append(rec.id)

    def _evaluated(self, e: DiscoveryEvaluated) -> None:
        node_id = e.node_id
        self.evaluated.add(node_id)
        out = self.journal.nodes[node_id].outcome_as(DiscoveryOutcome)
        if e.kind == "reflect":
            self.reflections.append(
                ReflectionRecord(node_id, len(self.reflections) + 1, e.seq, out.reflection if out else None)
            )
        elif e.kind in CHECK_KINDS:
            self.records[self.check_of[node_id]].checks[e.kind] = out.checks if out else []
        elif e.kind == "heldout":
            rec = self.records[self.heldout_of[node_id]]
            rec.heldout, rec.heldout_done = (out.evidence if out else None), True
        else:
            rec = self.records[node_id]
            rec.eval_seq = e.seq
            if out is not None:
                rec.hypothesis, rec.evidence = out.hypothesis, out.evidence
                rec.error, rec.figure_reading = out.error, out.figure_reading
            else:
                rec.error = e.reason

    # -- views ----------------------------------------------------------------------------------
    def proposals(self) -> list[Record]:
        return list(self.records.values())

    def tests_done(self) -> int:
        """The global count of tests run on train (a Bonferroni correction's T across chains)."""
        return sum(r.evidence is not None for r in self.records.values())

    def bank(self, before_seq: int | None = None) -> list[str]:
        for seq, ids in reversed(self.bank_history):
            if before_seq is None or seq < before_seq:
                return ids
        return []

    def guidance(self, before_seq: int) -> str:
        done = [r for r in self.reflections if r.seq < before_seq and r.reflection is not None]
        return done[-1].reflection.guidance() if done and done[-1].reflection else ""

    def last_seq(self) -> int:
        return self.journal.log.count
