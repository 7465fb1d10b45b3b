"""Discovery as an engine `Strategy`: each hypothesis is a node whose code is the analysis, run
as a `DiscoveryJob` by whatever Executor the run uses, journaled, resumable and within budgets.

The strategy absorbs finished nodes (journals what they mean: `discovery_evaluated`, gate
decisions, chain ends, bank updates), evaluates each hypothesis that needs it on the held-out
split exactly once, asks its policy (DiscoPER or ExperiGen, search/discovery/policies.py) for new
nodes, and keeps the claim store in step with the journal. Once a claim is decided (held-out
included), Silva checks it itself with no LLM call: adjusted for the covariates most associated
with its pair, then by negative controls (search/discovery/checks.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd

from engine.dispatch import Finish
from engine.events import DiscoveryEvaluated, DiscoveryFinished, Event, GateDecided
from engine.journal import Journal
from engine.llm import LLM
from engine.llm.prices import resolve_model
from engine.node import Node
from sandbox.base import Limits
from search.config import SearchSettings
from search.discovery import gates
from search.discovery.bank import Embedder, has_embedding_role, make_embedder
from search.discovery.checks import (
    CHECK_KINDS,
    CheckSpec,
    adjustment_code,
    candidate_covariates,
    claim_pair,
    control_column,
    seed_of,
)
from search.discovery.claims import Claim, ClaimStore, counts
from search.discovery.config import DiscoveryConfig
from search.discovery.data import (
    HELDOUT,
    TRAIN,
    Split,
    describe,
    identifier_columns,
    load_prior,
    make_split,
    read_table,
)
from search.discovery.evidence import GOOD, hypothesis_key
from search.discovery.interactions import KIND as INTERACTION
from search.discovery.interactions import InteractionFollowUps
from search.discovery.job import PROPOSING_KINDS, DiscoveryJob, DiscoveryOutcome
from search.discovery.plan import IDEA, PLAN
from search.discovery.prompts import Context, Tested, reflect_prompt
from search.discovery.state import DISCOVERY_KINDS, DiscoveryState, Record

MAX_REFLECT_HISTORY = 60
_NO = gates.GateDecision(gate="", passed=False, status="proposed", reason="")


class DiscoveryStrategy:
    def __init__(
        self, cfg: SearchSettings, dcfg: DiscoveryConfig, journal: Journal, llm: LLM, *, vision: bool = False
    ) -> None:
        from search.discovery.policies import make_policy

        self.cfg, self.dcfg, self.journal, self.llm, self.vision = cfg, dcfg, journal, llm, vision
        self.embed_with_gateway = has_embedding_role(cfg.llm)
        self.run_dir = journal.log.path.parent
        seed = dcfg.split_seed if dcfg.split_seed is not None else cfg.seed
        self.split: Split = make_split(
            self.run_dir,
            journal,
            dcfg.data,
            fraction=dcfg.heldout_fraction,
            seed=seed,
            image_column=dcfg.image_column,
            group_column=dcfg.group_column,
        )
        self.train = pd.read_parquet(self.split.table(TRAIN))
        self.identifiers = identifier_columns(self.train)
        self.dataset = describe(self.train, dcfg.image_column)
        self.prior = load_prior(dcfg.prior)
        self.state = DiscoveryState(journal)
        self.store = ClaimStore(self.run_dir)
        self._keys: dict[str, str] = {}  # record id -> hypothesis_key
        self._adjust: dict[str, tuple[str, str, list[str], list[str]] | None] = {}  # record id -> plan
        self.policy = make_policy(self)
        self.interactions = InteractionFollowUps(self)
        self._dirty = True

    # -- Strategy -------------------------------------------------------------------------------
    def propose(self, slots: int) -> list[Node]:
        self.absorb()
        out = self._heldout_nodes(slots)
        out += self._check_nodes(slots - len(out))
        out += self.interactions.nodes(slots - len(out))
        if len(out) < slots and self.state.finished is None:
            out += self.policy.propose(slots - len(out))
        if not out and self._dirty:
            self.write_store()
        return out

    def job_for(self, node: Node, attempt: int) -> DiscoveryJob:
        self.state.sync()  # the node was journaled after propose returned
        res = self.cfg.resources_for(node.kind)
        part = HELDOUT if node.kind in ("heldout", *CHECK_KINDS) else TRAIN
        checks = self._check_specs(node) if node.kind in CHECK_KINDS else []
        job = DiscoveryJob(
            node_id=node.id,
            attempt=attempt,
            run_dir=self.run_dir,
            kind=node.kind,
            stage=node.stage,
            idea=node.idea,
            # One execution runs every check of a claim: each may take what one hypothesis run may.
            limits=Limits(
                wall_s=self.cfg.budgets.node_timeout_s * max(1, len(checks)), memory_mb=res.memory_mb
            ),
            sandbox=self.cfg.sandbox.provider,
            sandbox_options=self.cfg.sandbox.options,
            python="python3" if self.cfg.sandbox.provider == "docker" else sys.executable,
            data_file=self.split.table(part),
            images_dir=self.split.images(part) if self.dcfg.image_column else None,
            llm=None if node.kind in ("heldout", INTERACTION, *CHECK_KINDS) else self.llm,
            vision=self.vision,
            novelty_weight=self.dcfg.novelty_weight,
            embed_with_gateway=self.embed_with_gateway,
            checks=checks,
            group_column=self.split.group_column,
            identifiers=self.identifiers,
        )
        seq = int(node.params.get("context_seq", self.state.last_seq()))
        if node.kind == "heldout":
            job.hypothesis = self.state.records[self.state.heldout_of[node.id]].hypothesis
        elif node.kind in CHECK_KINDS:
            pass  # Silva's own analyses (`checks`): no prompt
        elif node.kind == INTERACTION:
            self.interactions.prepare(job, node)
        elif node.kind == "reflect":
            job.prompt = reflect_prompt(
                self.context(seq, int(node.params.get("iteration", 0)), MAX_REFLECT_HISTORY),
                int(node.params.get("index", 1)),
            )
        else:
            job.known = {
                self._key(r): r.id
                for r in self.state.proposals()
                if r.hypothesis is not None and r.evaluated and r.status != "duplicate"
            }
            self.policy.prepare(job, node, seq)
        return job

    def finished(self) -> Finish | None:
        self.absorb()
        if self.state.finished is not None:
            return Finish("complete", self.state.finished.reason)
        busy = (
            self._open() or self._pending_heldout() or self._pending_checks() or self.interactions.pending()
        )
        if busy or not self.policy.done():
            return None
        if self.dcfg.chosen_gate == "bh" and not self.state.bh_done:
            return None  # the BH pass is made by propose, then its confirmations run
        reason = self.policy.finish_reason()
        claims = self.claims()
        self.journal.record(DiscoveryFinished(reason=reason, counts=counts(claims)))
        self.state.sync()
        self.write_store()
        return Finish("complete", reason)

    def embedder(self, node_id: str) -> Embedder:
        """Embeddings on the driver (bank pruning), attributed to `node_id` in the ledger."""
        node = self.journal.nodes[node_id]
        return make_embedder(
            self.llm,
            self.embed_with_gateway,
            node_id=node_id,
            stage=node.stage,
            idea=node.idea,
            in_driver=True,
        )

    # -- absorbing finished nodes ---------------------------------------------------------------
    def _open(self) -> list[Node]:
        return [
            n
            for n in self.journal.nodes.values()
            if n.kind in DISCOVERY_KINDS and n.id not in self.state.evaluated and not n.is_finished
        ]

    def absorb(self) -> None:
        """Journal what each newly finished discovery node means, in creation order."""
        self.state.sync()
        done = [
            n
            for n in self.journal.nodes.values()
            if n.kind in DISCOVERY_KINDS and n.is_finished and n.id not in self.state.evaluated
        ]
        for node in done:
            out = node.outcome_as(DiscoveryOutcome)
            self.record(
                DiscoveryEvaluated(
                    node_id=node.id, kind=node.kind, reason=(out.error if out else "") or node.reason
                )
            )
            if node.kind == "heldout":
                self._heldout_decision(self.state.records[self.state.heldout_of[node.id]])
            elif node.kind in CHECK_KINDS:
                self._check_decision(self.state.records[self.state.check_of[node.id]], node.kind, node.id)
            elif node.kind in PROPOSING_KINDS:
                rec = self.state.records[node.id]
                first = self.duplicate_of(rec)
                if first is not None:
                    self.decide(rec, "duplicate", gates.duplicate(first))
                (self.interactions if node.kind == INTERACTION else self.policy).evaluated(rec)
        if (
            self.dcfg.chosen_gate == "bh"
            and not self.state.bh_done
            and self.policy.done()
            and not self._open()
        ):
            self._bh_pass()
        self._confound_pass()

    def record(self, event: Event) -> None:
        self.journal.record(event)
        self.state.sync()
        self._dirty = True

    def decide(self, rec: Record, stage: str, decision: gates.GateDecision) -> None:
        self.record(GateDecided(node_id=rec.id, stage=stage, decision=decision.model_dump(mode="json")))

    def train_gate(self, rec: Record, *, bonferroni_tests: int) -> None:
        """A one-hypothesis train decision (DiscoPER): two-split's first half or Bonferroni."""
        d = self.dcfg
        if rec.evidence is None:
            self.decide(
                rec,
                "train",
                gates.GateDecision(
                    gate=d.chosen_gate,
                    passed=False,
                    status="inconclusive",
                    reason=f"no test result: {rec.error or 'unknown'}",
                ),
            )
            return
        sign = rec.hypothesis.expected_sign if rec.hypothesis else 0
        if d.chosen_gate == "two_split":
            self.decide(
                rec,
                "train",
                gates.two_split_train(rec.evidence, sign, alpha=d.alpha, min_effect=d.min_effect),
            )
        elif d.chosen_gate == "bonferroni":
            _, decisions = gates.bonferroni_chain(
                [(rec.id, rec.evidence, sign)],
                alpha=d.alpha,
                min_effect=d.min_effect,
                chain_length=bonferroni_tests,
                global_tests=self.state.tests_done(),
            )
            self.decide(rec, "train", decisions[rec.id])

    def _bh_pass(self) -> None:
        evidence = {
            r.id: (r.evidence, r.hypothesis.expected_sign if r.hypothesis else 0)
            for r in self.state.proposals()
            if r.evaluated and r.status != "duplicate"
        }
        for rid, decision in gates.bh_decisions(
            evidence, alpha=self.dcfg.alpha, min_effect=self.dcfg.min_effect
        ).items():
            self.decide(self.state.records[rid], "bh", decision)

    def _key(self, rec: Record) -> str:
        """`hypothesis_key` of an evaluated record, parsed once (its hypothesis never changes)."""
        assert rec.hypothesis is not None
        if rec.id not in self._keys:
            self._keys[rec.id] = hypothesis_key(rec.hypothesis)
        return self._keys[rec.id]

    def duplicate_of(self, rec: Record) -> str | None:
        """The first evaluated hypothesis with the same `hypothesis_key` as `rec`, if another."""
        if rec.hypothesis is None or rec.eval_seq is None:
            return None
        key = self._key(rec)
        for r in sorted(self.state.proposals(), key=lambda r: r.eval_seq or 0):
            if r.eval_seq is not None and r.eval_seq < rec.eval_seq and r.hypothesis is not None:
                if self._key(r) == key:
                    return r.id
        return None

    # -- confound checks (docs/discovery.md, "Confound checks") ---------------------------------
    def check_target(self, rec: Record) -> str | None:
        """The claim an adjusted or stratified test re-analyses: the one it names (`refines`, or
        its chain predecessor), else the earliest marginal claim on exactly its two variables."""
        ev, h = rec.evidence, rec.hypothesis
        if ev is None or h is None or not ev.adjusted_for:
            return None
        named = self.state.records.get(h.refines or rec.parent or "")
        if named is not None and named.id != rec.id:
            return named.id
        for r in self.state.proposals():
            if (
                r.created_seq < rec.created_seq
                and r.hypothesis is not None
                and r.evidence is not None
                and not r.evidence.adjusted_for
                and frozenset(r.hypothesis.variables) == ev.pair
            ):
                return r.id
        return None

    def _confound_pass(self) -> None:
        """Demote each accepted claim that a finished check of it explains away."""
        for rec in self.state.proposals():
            target = self.state.records.get(self.check_target(rec) or "")
            if target is None or rec.evidence is None or target.status not in GOOD:
                continue
            decision = gates.confound_check(
                rec.id, rec.evidence, alpha=self.dcfg.alpha, min_effect=self.dcfg.min_effect
            )
            if decision is not None:
                self.decide(target, "confound", decision)

    # -- Silva's own checks of a decided claim (docs/discovery.md, "Silva's own checks") ---------
    def _decided(self, rec: Record) -> bool:
        """Accepted or supported, with no held-out evaluation still to come."""
        return (
            rec.status in GOOD
            and rec.evidence is not None
            and rec.hypothesis is not None
            and not self.needs_heldout(rec)
            and (rec.heldout_node is None or rec.heldout_done)
        )

    def _covariates(self, rec: Record) -> tuple[str, str, list[str], list[str]] | None:
        """(x, y, already adjusted for, covariates to adjust for) of a claim Silva adjusts."""
        assert rec.hypothesis is not None and rec.evidence is not None
        if rec.id not in self._adjust:
            pair = claim_pair(rec.hypothesis, rec.evidence, list(self.train.columns))
            found = None
            if pair is not None and self.dcfg.adjust_covariates:
                x, y, given = pair
                skip = [
                    *given,
                    *self.identifiers,
                    *(c for c in (self.split.group_column, self.dcfg.image_column) if c),
                ]
                covariates = candidate_covariates(
                    self.train, x, y, skip, alpha=self.dcfg.alpha, limit=self.dcfg.adjust_covariates
                )
                found = (x, y, given, covariates) if covariates else None
            self._adjust[rec.id] = found
        return self._adjust[rec.id]

    def _due_check(self, rec: Record) -> str | None:
        """The check a decided claim needs next: adjustment first, then negative controls."""
        if not self._decided(rec):
            return None
        if "adjustment" not in rec.check_nodes and self._covariates(rec) is not None:
            return "adjustment"
        adjusted = "adjustment" not in rec.check_nodes or "adjustment" in rec.checks
        assert rec.hypothesis is not None and rec.evidence is not None
        if (
            adjusted
            and self.dcfg.negative_controls
            and "control" not in rec.check_nodes
            and control_column(rec.hypothesis, rec.evidence, list(self.train.columns)) is not None
        ):
            return "control"
        return None

    def _pending_checks(self) -> list[tuple[Record, str]]:
        return [(r, kind) for r in self.state.proposals() if (kind := self._due_check(r)) is not None]

    def _check_nodes(self, slots: int) -> list[Node]:
        out = []
        for rec, kind in self._pending_checks()[: max(slots, 0)]:
            out.append(self.node(kind, parent=rec.id, plan=f"Silva's {kind} check of {rec.id}"))
            rec.check_nodes[kind] = "pending"  # no second node for it in this batch
        return out

    def _check_specs(self, node: Node) -> list[CheckSpec]:
        rec = self.state.records[self.state.check_of[node.id]]
        assert rec.hypothesis is not None and rec.evidence is not None
        if node.kind == "control":
            column = control_column(rec.hypothesis, rec.evidence, list(self.train.columns))
            assert column is not None
            return [
                CheckSpec(
                    label=f"{column} permuted, #{k + 1}",
                    code=rec.hypothesis.code,
                    permute=column,
                    seed=seed_of(f"{self.cfg.seed}:{rec.id}:{k}"),
                )
                for k in range(self.dcfg.negative_controls)
            ]
        plan = self._covariates(rec)
        assert plan is not None
        x, y, given, covariates = plan
        return [CheckSpec(label=z, code=adjustment_code(self.train, x, y, [*given, z])) for z in covariates]

    def _check_decision(self, rec: Record, kind: str, node_id: str) -> None:
        """Demote a claim still standing that Silva's check finds explained or spurious."""
        if rec.status not in GOOD or rec.evidence is None:
            return
        d, results = self.dcfg, rec.checks.get(kind, [])
        if kind == "adjustment":
            for r in results:
                decision = (
                    gates.confound_check(
                        f"Silva's adjustment {node_id}",
                        r.evidence,
                        alpha=d.alpha,
                        min_effect=d.min_effect,
                        covariate=r.label,
                    )
                    if r.evidence is not None
                    else None
                )
                if decision is not None:
                    self.decide(rec, "covariate", decision)
                    return
            return
        assert rec.hypothesis is not None
        decision = gates.negative_controls(
            control_column(rec.hypothesis, rec.evidence, list(self.train.columns)) or "",
            self.controls_passed(rec),
            len(results),
            alpha=d.alpha,
        )
        if decision is not None:
            self.decide(rec, "control", decision)

    def controls_passed(self, rec: Record) -> int:
        """How many of the claim's negative controls would have passed the run's held-out gate."""
        if rec.evidence is None:
            return 0
        sign = rec.hypothesis.expected_sign if rec.hypothesis else 0
        return sum(
            gates.control_passed(
                self.dcfg.chosen_gate,
                rec.evidence,
                r.evidence,
                sign,
                alpha=self.dcfg.alpha,
                min_effect=self.dcfg.min_effect,
                ratio=self.dcfg.replication_ratio,
            )
            for r in rec.checks.get("control", [])
        )

    # -- held-out: once per hypothesis ----------------------------------------------------------
    def needs_heldout(self, rec: Record) -> bool:
        d = rec.last()
        if d is None or not d.passed or rec.heldout_node is not None:
            return False
        if self.dcfg.chosen_gate == "two_split":
            return d.gate == "two_split" and d.status == "proposed"
        confirms = rec.kind == INTERACTION or self.policy.confirms(rec)
        return self.dcfg.confirm_heldout and d.status == "accepted" and confirms

    def _pending_heldout(self) -> list[Record]:
        return [r for r in self.state.proposals() if self.needs_heldout(r)]

    def _heldout_nodes(self, slots: int) -> list[Node]:
        out = []
        for rec in self._pending_heldout()[:slots]:
            out.append(
                Node(
                    parent_id=rec.id,
                    stage=PLAN.first,
                    kind="heldout",
                    idea=IDEA,
                    seed=self.cfg.seed,
                    plan=f"held-out evaluation of {rec.id}",
                )
            )
            # Registered now so that a second proposal in this batch cannot add another one.
            rec.heldout_node = "pending"
        return out

    def _heldout_decision(self, rec: Record) -> None:
        d = self.dcfg
        sign = rec.hypothesis.expected_sign if rec.hypothesis else 0
        two_split = d.chosen_gate == "two_split"
        if rec.evidence is None or rec.heldout is None:
            decision = gates.GateDecision(
                gate="two_split" if two_split else "heldout_confirmation",
                passed=False,
                status="inconclusive",
                reason="the held-out analysis produced no test result",
            )
        elif two_split:
            decision = gates.two_split_heldout(
                rec.evidence,
                rec.heldout,
                sign,
                alpha=d.alpha,
                min_effect=d.min_effect,
                ratio=d.replication_ratio,
            )
        else:
            decision = gates.confirm_heldout(
                rec.evidence,
                rec.heldout,
                sign,
                alpha=d.alpha,
                min_effect=d.min_effect,
                ratio=d.replication_ratio,
            )
        self.decide(rec, "heldout" if two_split else "confirm", decision)

    # -- prompts --------------------------------------------------------------------------------
    def tested(self, rec: Record, before_seq: int) -> Tested:
        """A duplicate is shown with the train evidence of the hypothesis that answered it."""
        assert rec.hypothesis is not None
        first = self.state.records.get(str((rec.last("duplicate") or _NO).numbers.get("duplicate_of")))
        evidence = first.evidence if first is not None else rec.evidence
        return Tested(rec.id, rec.hypothesis, evidence, rec.train_verdict(before_seq))

    def context(self, before_seq: int, iteration: int, history: int) -> Context:
        """What a prompt made at `before_seq` may know: only what was journaled before it."""
        seen = [
            r
            for r in self.state.proposals()
            if r.eval_seq is not None and r.eval_seq < before_seq and r.hypothesis is not None
        ]
        inflight = sum(
            1
            for r in self.state.proposals()
            if r.created_seq < before_seq and (r.eval_seq is None or r.eval_seq >= before_seq)
        )
        return Context(
            dataset=self.dataset,
            prior=self.prior,
            iteration=iteration,
            history=[self.tested(r, before_seq) for r in seen[-history:]] if history else [],
            guidance=self.state.guidance(before_seq),
            inflight=inflight,
        )

    def node(self, kind: str, *, parent: str | None = None, plan: str, **params: Any) -> Node:
        return Node(
            parent_id=parent,
            stage=PLAN.first,
            kind=kind,
            idea=IDEA,
            seed=self.cfg.seed,
            plan=plan,
            params={"context_seq": self.state.last_seq(), **params},
        )

    # -- the claim store ------------------------------------------------------------------------
    def claims(self) -> list[Claim]:
        bank = set(self.state.bank())
        out = []
        for r in self.state.proposals():
            h, ev, held = r.hypothesis, r.evidence, r.heldout
            last = r.last()
            held_node = self.journal.nodes.get(r.heldout_node or "")
            out.append(
                Claim(
                    id=r.id,
                    kind=r.kind,
                    statement=h.statement if h else "",
                    h0=h.h0 if h else "",
                    h1=h.h1 if h else "",
                    variables=h.variables if h else [],
                    code=h.code if h else "",
                    test=ev.test if ev else "",
                    effect_name=ev.effect_name if ev else "",
                    effect_train=ev.effect if ev else None,
                    sign=ev.sign if ev else None,
                    expected_sign=h.expected_sign if h else 0,
                    log_p_train=ev.log_p if ev else None,
                    n_train=ev.n if ev else None,
                    effect_heldout=held.effect if held else None,
                    log_p_heldout=held.log_p if held else None,
                    n_heldout=held.n if held else None,
                    status=r.status if r.evaluated else "proposed",
                    reason=self._reason(r),
                    gate=last.gate if last else "",
                    parent=self.check_target(r) or r.parent or (h.refines if h and h.refines else None),
                    chain=r.chain,
                    step=r.step,
                    heldout_uses=held_node.attempts if held_node else 0,
                    in_bank=r.id in bank,
                    assumptions_failed=[k for k, c in ev.assumptions.items() if not c.ok] if ev else [],
                    figure_reading=r.figure_reading,
                    covariates_checked=[c.label for c in r.checks.get("adjustment", [])],
                    controls=len(r.checks.get("control", [])),
                    controls_passed=self.controls_passed(r),
                )
            )
        return out

    def _reason(self, r: Record) -> str:
        last = r.last()
        if last is None:
            return r.error
        first = self.state.records.get(str(last.numbers.get("duplicate_of")))
        if last.status == "duplicate" and first is not None:
            return f"{last.reason}, now {first.status}"
        return last.reason

    def write_store(self) -> None:
        claims = self.claims()
        refl = [
            {"node_id": r.node_id, "index": r.index, **(r.reflection.model_dump() if r.reflection else {})}
            for r in self.state.reflections
        ]
        self.store.write(
            claims,
            {
                "mode": self.dcfg.mode,
                "gate": self.dcfg.chosen_gate,
                "alpha": self.dcfg.alpha,
                "min_effect": self.dcfg.min_effect,
                "replication_ratio": self.dcfg.replication_ratio,
                "split": self.state.split.model_dump(mode="json", exclude={"type", "seq", "ts"})
                if self.state.split
                else {},
                "tests": self.state.tests_done(),
                "counts": counts(claims),
                "reflections": refl,
                "bank": self.state.bank(),
                "finished": self.state.finished.reason if self.state.finished else None,
            },
        )
        self._dirty = False


def build_discovery_strategy(
    cfg: SearchSettings, dcfg: DiscoveryConfig, journal: Journal, llm: LLM
) -> DiscoveryStrategy:
    """The discovery mode's builder (search/discovery/mode.py): `dcfg` is the `discovery:` section."""
    return DiscoveryStrategy(cfg, dcfg, journal, llm, vision=_has_vision(cfg))


def _has_vision(cfg: SearchSettings) -> bool:
    """Figures are read only when a `vision` role maps to a model that can see."""
    if cfg.llm is None or "vision" not in cfg.llm.roles:
        return False
    return resolve_model(cfg.llm, cfg.llm.roles["vision"].model).capabilities.vision


def resolve_paths(dcfg: DiscoveryConfig, base: Path) -> DiscoveryConfig:
    """`data`, `prior` relative to the config file's directory."""
    updates: dict[str, Path] = {}
    for name in ("data", "prior"):
        value = getattr(dcfg, name)
        if value is not None and not value.is_absolute():
            updates[name] = (base / value).resolve()
    return dcfg.model_copy(update=updates)


METRICS = [  # what each hypothesis node reports (its train or held-out test)
    {"name": "log_p", "direction": "minimize", "primary": True},
    {"name": "abs_effect", "direction": "maximize", "primary": False},
    {"name": "n", "direction": "maximize", "primary": False},
]


def check_discovery(dcfg: DiscoveryConfig) -> list[dict[str, object]]:
    """Everything about the `discovery:` section that can fail, before a run directory exists;
    returns the metrics every hypothesis node reports."""
    read_table(dcfg.data)
    load_prior(dcfg.prior)
    return METRICS
