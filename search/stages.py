"""The stage manager: for each stage of a mode's `StagePlan`, search, one best-node decision,
seed replication, aggregation, promotion.

All state comes from the journal (stage_started / stage_best / stage_ended events and the nodes),
so a resumed run picks up exactly where the killed one stopped. The search phase of each stage
is delegated to a `StageSearch` (template proposers offline; LLM operators and policies online).
A decision that needs an LLM (tie-break, sanity check) runs as a `selection` job on a worker,
never on the driver: `propose` stays fast whatever the provider does.
"""

from __future__ import annotations

import math
from typing import Protocol

from pydantic import Field

from engine.aggregate import AggregationJob
from engine.dispatch import Finish
from engine.events import StageBest, StageEnded, StageStarted
from engine.executor import Job
from engine.journal import Journal
from engine.node import MetricSpec, Node, NodeStatus
from engine.outcome import NodeOutcome
from search.config import SearchSettings
from search.plan import StagePlan

REPLICATION, AGGREGATION, SELECTION = "replication", "aggregation", "selection"
SUPPORT_KINDS = (REPLICATION, AGGREGATION, SELECTION)
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


class StageSearch(Protocol):
    """The search phase of a stage: what to try, when it is done, how to run a node."""

    def propose(self, journal: Journal, stage: str, root: Node | None, slots: int) -> list[Node]: ...

    def search_done(self, journal: Journal, stage: str, root: Node | None) -> str | None:
        """A reason the stage's search ended early (e.g. first good node of stage 1), or None.
        It may discard the stage's unfinished proposals that the end makes moot."""

    def job_for(self, node: Node, attempt: int) -> Job:
        """The job of a search node or of a replicate (a copy of a search node with a new seed)."""

    def label(self, node: Node) -> str: ...


class BestChooser(Protocol):
    """Second opinion on a stage's best node (LLM mode): tie-break and sanity check, as a job."""

    def job_for(self, node: Node, attempt: int, ranked: list[Node], spec: MetricSpec) -> Job:
        """The job deciding among `ranked` (good nodes, best first); its outcome is a `Selection`."""


class Selection(NodeOutcome):
    """A stage's best-node decision made by a selection job."""

    family: str = "selection"
    node_id: str = Field(description="the chosen node")
    by: str = Field(description="what decided: the metric, an LLM tie-break, an LLM sanity override")
    metric_best: str
    candidates: list[str]
    tied: list[str] = Field(default_factory=list)
    llm_choice: str | None = None
    llm_reason: str = ""
    metric_best_is_sane: bool | None = None
    llm_error: str = ""


class StageNodes:
    """One stage's nodes of one idea, kept up to date as the journal grows: each look reads only
    the ids added since the last (`Journal.stage_ids`), and re-checks only the nodes still out,
    so a look costs what changed, not the stage's size (docs/engine.md, "Driver scaling": a
    2,000-node stage rescanned on every completion cost 10-25 ms a completion by its end).
    After a discard in its stage it is rebuilt (discards are rare, and a discarded node leaves
    its stage's work; a discard elsewhere leaves it as it is). Its lists belong to it: callers
    read, never change them."""

    def __init__(self, journal: Journal, idea: str, stage: str) -> None:
        self.journal, self.idea, self.stage = journal, idea, stage
        self._reset()

    def _reset(self) -> None:
        self.read = 0
        self.seen_events = -1
        self.discards = self.journal.discards_in.get((self.idea, self.stage), 0)
        self.search: list[Node] = []  # search nodes (not support kinds), oldest first
        self.kinds: dict[str, list[Node]] = {}  # every kind's nodes, oldest first
        self.unfinished: dict[str, Node] = {}  # search nodes without a result, oldest first
        self.done: list[Node] = []  # search nodes with a result, in the order seen finished
        self.index: dict[str, int] = {}  # search node -> its place in `search`
        self.generation = getattr(self, "generation", -1) + 1  # views built on this one restart

    def refresh(self) -> StageNodes:
        j = self.journal
        if j.log.count == self.seen_events:  # nothing journaled since the last look
            return self
        if j.discards_in.get((self.idea, self.stage), 0) != self.discards:
            self._reset()
        self.seen_events = j.log.count
        ids = j.stage_ids(self.stage, self.idea)
        for node_id in ids[self.read :]:
            node = j.nodes[node_id]
            if node.status == NodeStatus.DISCARDED:
                continue
            self.kinds.setdefault(node.kind, []).append(node)
            if node.kind in SUPPORT_KINDS:
                continue
            self.index[node.id] = len(self.search)
            self.search.append(node)
            if node.is_finished:
                self.done.append(node)
            else:
                self.unfinished[node.id] = node
        self.read = len(ids)
        for node in [n for n in self.unfinished.values() if n.is_finished]:
            del self.unfinished[node.id]
            self.done.append(node)
        return self


class StageManager:
    """Drives one tree (one idea) through the stages. Implements engine.dispatch.Strategy."""

    def __init__(
        self,
        cfg: SearchSettings,
        journal: Journal,
        search: StageSearch,
        plan: StagePlan,
        idea: str = "default",
        *,
        spec: MetricSpec | None = None,
        chooser: BestChooser | None = None,
    ) -> None:
        self.cfg, self.journal, self.search, self.plan, self.idea = cfg, journal, search, plan, idea
        # A forest's trees may each declare their own primary metric; templates use the run's.
        self.spec, self.chooser = spec, chooser
        self._views: dict[str, StageNodes] = {}
        self._followed: dict[str, str] = {}  # stage -> the leader its next stage last grew from
        self._names = plan.names  # a tuple the plan builds on each read: asked at every proposal
        # stage -> (view generation, finished nodes folded, best of them by (score, -place))
        self._best: dict[str, tuple[int, int, tuple[float, float] | None, Node | None]] = {}

    # -- state derived from the journal ---------------------------------------------------
    def _key(self, stage: str) -> tuple[str, str]:
        return (self.idea, stage)

    def root_for(self, stage: str) -> Node | None:
        """The best node of the latest earlier stage that had one: this stage grows from it."""
        best: Node | None = None
        for s in self.plan.before(stage):
            decision = self.journal.stage_best.get(self._key(s))
            if decision is not None and decision.node_id:
                best = self.journal.nodes[decision.node_id]
        return best

    def view(self, stage: str) -> StageNodes:
        v = self._views.get(stage)
        if v is None:
            v = self._views[stage] = StageNodes(self.journal, self.idea, stage)
        return v.refresh()

    def search_nodes(self, stage: str) -> list[Node]:
        return list(self.view(stage).search)

    def _finished_best(self, stage: str, spec: MetricSpec) -> tuple[tuple[float, float] | None, Node | None]:
        """The stage's best finished search node by (score, older first), folded in as nodes
        finish: what `spec.best` over the finished nodes gives, at the cost of what changed."""
        v = self.view(stage)
        gen, folded, key, best = self._best.get(stage, (v.generation, 0, None, None))
        if gen != v.generation:
            folded, key, best = 0, None, None
        for n in v.done[folded:]:
            score = spec.score(n)
            if score is not None and (key is None or (score, -v.index[n.id]) > key):
                key, best = (score, -v.index[n.id]), n
        self._best[stage] = (v.generation, len(v.done), key, best)
        return key, best

    def finished(self) -> Finish | None:
        first = self.journal.stage_ended.get(self._key(self.plan.first))
        if first is not None and first.best_node_id is None:
            return Finish("stopped", f"stopped: {first.reason}")
        if all(self._key(s) in self.journal.stage_ended for s in self._names):
            n = len(self.plan.stages)
            return Finish("complete", f"all {NUMBER_WORDS.get(n, str(n))} stages complete")
        return None

    # -- proposing ----------------------------------------------------------------------
    def propose(self, slots: int) -> list[Node]:
        """Stages overlap: once a stage's best node is decided, the next stage's search grows
        from it while the decided stage's replicates and aggregation still run."""
        proposed: list[Node] = []
        for stage in self._names:
            if slots <= len(proposed) or self.finished() is not None:
                break
            if self._key(stage) in self.journal.stage_ended:
                continue
            batch, searching = self._step(stage, slots - len(proposed))
            proposed += batch
            if searching:
                break  # later stages wait for this stage's best-node decision
        return proposed

    def _step(self, stage: str, slots: int) -> tuple[list[Node], bool]:
        """New nodes for this stage, and whether it is still searching (no decision yet)."""
        j, key = self.journal, self._key(stage)
        root = self.root_for(stage)
        if key not in j.stage_started:
            j.record(StageStarted(idea=self.idea, stage=stage, root=root.id if root else None))
        if key not in j.stage_best:
            searching = self._search(stage, root, slots)
            if searching is not None:
                return searching, True
        return self._after_decision(stage, slots), False

    def _search(self, stage: str, root: Node | None, slots: int) -> list[Node] | None:
        """The stage's search work until its best node is decided; None once it is."""
        j = self.journal
        early = self.search.search_done(j, stage, root)  # first: it may discard proposals it no longer needs
        view = self.view(stage)
        budget_left = self.cfg.stages[stage].max_nodes - len(view.search)
        if early is None and budget_left > 0:
            return self.search.propose(j, stage, root, min(slots, budget_left))
        out = list(view.unfinished.values())
        judged_only = self._cannot_win(stage, out)
        if out and not judged_only:
            # Decide once every search node of the stage is in (or out only for a judgement
            # that cannot make it the best); meanwhile free slots take speculative work
            # from the stage's leader (docs/engine.md).
            return self._speculate(stage, slots)
        searched = list(view.search)
        why = early or f"node budget of {len(searched)} used"
        if out:
            why += (
                f" (not waiting for the judgement of {', '.join(n.id for n in out)}: "
                "the metric its run reported does not beat the best)"
            )
        selection = self._decide(stage, searched, why)
        if selection is not None:  # an LLM's second opinion first: speculate while it thinks
            return selection + self._speculate(stage, slots - len(selection))
        return None

    def _after_decision(self, stage: str, slots: int) -> list[Node]:
        """Replicates of the decided best, their aggregate, then the stage's end."""
        j, key = self.journal, self._key(stage)
        decision = j.stage_best[key]
        nxt = self.plan.after(stage)
        if nxt is not None and self._key(nxt) not in j.stage_started:
            # Here rather than in _decide: a driver killed between the two still discards.
            self._discard_speculation(stage, j.nodes[decision.node_id] if decision.node_id else None)
        if decision.node_id is None:
            j.record(StageEnded(idea=self.idea, stage=stage, best_node_id=None, reason=decision.reason))
            return []
        best = j.nodes[decision.node_id]
        replicates = self._replicates(stage, best)
        if len(replicates) < self.cfg.replicates:
            need = min(slots, self.cfg.replicates - len(replicates))
            return [self._replicate(best, stage, len(replicates) + 1 + i) for i in range(need)]
        earlier_open = any(self._key(s) not in j.stage_ended for s in self.plan.before(stage))
        if any(not n.is_finished for n in replicates) or earlier_open:
            return []  # the aggregate compares with the previous stage's, so it waits for it
        aggregates = self.view(stage).kinds.get(AGGREGATION, [])
        if not aggregates:
            return [self._aggregate(stage, best, replicates)]
        if not aggregates[0].is_finished:
            return []
        j.record(
            StageEnded(
                idea=self.idea,
                stage=stage,
                best_node_id=best.id,
                aggregate_node_id=aggregates[0].id,
                reason=decision.reason,
            )
        )
        return []

    def _contenders(self, stage: str, searched: list[Node]) -> list[Node]:
        """The nodes that can be the stage's best: its search nodes, and its root where the plan
        says the stage keeps it (a tuning stage whose settings are all worse hands its root on)."""
        root = self.root_for(stage) if self.plan[stage].keeps_root else None
        return searched + ([root] if root is not None else [])

    def _kept_root(self, stage: str) -> Node | None:
        return self.root_for(stage) if self.plan[stage].keeps_root else None

    def _provisional(self, stage: str, spec: MetricSpec) -> Node | None:
        """The stage's provisional best: its best finished contender so far (a kept root, last
        among the contenders, only where no search node matches it)."""
        key, best = self._finished_best(stage, spec)
        root = self._kept_root(stage)
        score = spec.score(root) if root is not None and root.is_finished else None
        if score is not None and (key is None or score > key[0]):
            return root
        return best

    def _cannot_win(self, stage: str, out: list[Node]) -> bool:
        """Whether every node still out has finished its run (a pipelined attempt's `run` step)
        and waits only for its judgement, with a metric below the best finished contender's.
        A judgement keeps a node's metric or rules the node out, so none of these can become
        the stage's best: the decision need not wait for the LLM's slowest answers."""
        spec = self.spec or self.journal.primary_metric
        best = self._provisional(stage, spec) if spec and out else None
        if spec is None or best is None:
            return False
        floor = spec.score(best)
        assert floor is not None
        return not self._may_beat(out, floor, spec)

    @staticmethod
    def _may_beat(out: list[Node], floor: float, spec: MetricSpec) -> list[Node]:
        """The nodes of `out` (unfinished) that may still reach the score `floor`: those whose
        run has not finished, and those whose run reported a metric at least `floor` (a failed
        run cannot: its judgement will find it buggy)."""
        may: list[Node] = []
        for n in out:
            if "run" in n.steps:
                score = StageManager._reported(n, spec)
                if score is None or score < floor:
                    continue
            may.append(n)
        return may

    @staticmethod
    def _reported(node: Node, spec: MetricSpec) -> float | None:
        """The node's score as far as it is known: a finished node's, or the metric an unjudged
        node's run reported (None if that run failed: its judgement will find it buggy)."""
        if node.is_finished:
            return spec.score(node)
        ran = node.steps.get("run")
        problem: str = getattr(ran, "run_problem", "")
        if ran is None or problem:
            return None
        return spec.oriented(
            next((m.value for m in getattr(ran, "metrics", []) if m.name == spec.name), None)
        )

    def _replicates(self, stage: str, best: Node) -> list[Node]:
        """The seed replicates of `best` as this stage's best: a kept root's are those its own
        stage ran (the same seeds again would repeat the same runs), then any made here."""
        stages = dict.fromkeys((best.stage, stage))
        return [n for s in stages for n in self.view(s).kinds.get(REPLICATION, []) if n.parent_id == best.id]

    def _decide(self, stage: str, searched: list[Node], why_ended: str) -> list[Node] | None:
        """Record the stage's best node among its contenders; when the chooser must be asked, the
        selection node to run first (None once decided, or while it runs: [] )."""
        spec = self.spec or self.journal.primary_metric
        good = [n for n in self._contenders(stage, searched) if n.status == NodeStatus.GOOD]
        ranked = spec.ranked(good) if spec is not None else []
        best = ranked[0] if ranked else None
        selection: Selection | None = None
        if self.chooser is not None and spec is not None and len(ranked) > 1:
            runs = self.view(stage).kinds.get(SELECTION, [])
            if not runs:
                return [
                    Node(
                        stage=stage,
                        kind=SELECTION,
                        idea=self.idea,
                        refs=[n.id for n in ranked],
                        plan=f"choose the best of {len(ranked)} good node(s) on {spec.name}",
                    )
                ]
            if not runs[0].is_finished:
                return []
            selection = runs[0].outcome_as(Selection)
            if selection is not None:
                best = self.journal.nodes[selection.node_id]
        if best is None:
            reason = f"stage {stage} found no good node in {len(searched)} node(s) ({why_ended})"
        else:
            reason = f"{why_ended}; best of {len(good)} good node(s) on {spec.name if spec else '?'}"
            if best.stage != stage:
                reason += f": its root {best.id}, which no node of the stage beat"
            elif any(n.stage != stage for n in good):
                reason += ", its root among them"
            if selection is not None:
                reason += f" ({selection.by})"
        self.journal.record(
            StageBest(
                idea=self.idea,
                stage=stage,
                node_id=best.id if best else None,
                metric=spec.name if spec else None,
                value=best.metric(spec.name) if best and spec else None,
                reason=reason,
                **({"selection": selection.model_dump(mode="json")} if selection else {}),
            )
        )
        return None

    def _replicate(self, best: Node, stage: str, index: int, speculative: bool = False) -> Node:
        origin = best.origin.model_copy(update={"label": self.search.label(best), "speculative": speculative})
        return Node(
            parent_id=best.id,
            stage=stage,
            kind=REPLICATION,
            idea=self.idea,
            plan=f"seed replicate {index} of {best.id}",
            code=best.code,
            params=best.params,
            seed=self.cfg.seed + index,
            origin=origin,
        )

    def _speculate(self, stage: str, slots: int) -> list[Node]:
        """Work for free slots while a stage's last search nodes run, recorded as speculative:
        - seed replicates of its provisional best (its best judged node so far): if it is
          decided best they are its replicates (the stage ends sooner), else they stay in the
          journal unused;
        - then the next stage's first search nodes grown from its leader (`_leader`: its best
          node so far, judged or only run): kept as that stage's nodes if it is decided best,
          discarded (`node_discarded`, their jobs cancelled) if not.
        Replicates wait for the judgement: they hold slots, and a run not yet judged may still be
        overtaken or ruled out; a next-stage think holds none."""
        spec = self.spec or self.journal.primary_metric
        if not self.cfg.search.speculate or spec is None or slots <= 0:
            return []
        out: list[Node] = []
        provisional = self._provisional(stage, spec)
        if provisional is not None:
            done = self._replicates(stage, provisional)
            need = min(slots, self.cfg.replicates - len(done))
            out = [
                self._replicate(provisional, stage, len(done) + 1 + i, speculative=True) for i in range(need)
            ]
        leader = self._leader(stage, spec)
        if leader is None:
            return out
        share = self._standing(stage, leader, spec)
        return out + self._speculate_next(stage, leader, share, slots - len(out))

    def _leader(self, stage: str, spec: MetricSpec) -> Node | None:
        """The stage's best contender by what is known so far: a finished node's metric, or the
        metric an unjudged node's run reported (on a tie, a judged node, then the older). Growing
        from a run that still waits for its judgement takes one LLM call per stage off the
        chain the stages wait on; its judgement mostly keeps it, and where it rules the run out
        the work grown from it is discarded like any other lost premise. The finished nodes'
        best is kept as they finish (`_finished_best`), so only the nodes still out are read."""
        v = self.view(stage)
        key, best = self._finished_best(stage, spec)
        scored = [] if best is None or key is None else [(key[0], True, key[1], best)]
        scored += [
            (score, False, -v.index[n.id], n)
            for n in v.unfinished.values()
            if (score := self._reported(n, spec)) is not None
        ]
        root = self._kept_root(stage)  # last among the contenders
        if root is not None and (score := self._reported(root, spec)) is not None:
            scored.append((score, root.is_finished, -math.inf, root))
        return max(scored, key=lambda t: t[:3])[3] if scored else None

    def _speculate_next(self, stage: str, leader: Node, share: float, slots: int) -> list[Node]:
        nxt = self.plan.after(stage)
        if nxt is None or slots <= 0 or self._key(nxt) in self.journal.stage_started:
            return []
        self._follow_leader(stage, nxt, leader)
        budget = math.ceil(self.cfg.stages[nxt].max_nodes * share) - len(self.view(nxt).search)
        nodes = self.search.propose(self.journal, nxt, leader, min(slots, budget)) if budget > 0 else []
        for n in nodes:
            n.origin = n.origin.model_copy(update={"speculative": True})
        return nodes

    def _follow_leader(self, stage: str, nxt: str, leader: Node) -> None:
        """A new leader replaces the premise: the next stage's set grown from the old one is
        discarded (its jobs cancelled, its slots freed); a new set grows from the new one.
        The set grows only from the leader it last followed, so while that stays, nothing is
        read (settle asks at every completion)."""
        if self._followed.get(stage) == leader.id:
            return
        self._followed[stage] = leader.id
        for n in self.search_nodes(nxt):
            premise = self._premise(n)
            if premise != leader.id:
                self.journal.discard(
                    n.id, f"speculative: grew from {premise}, but {leader.id} now leads {stage}"
                )

    def settle(self, node: Node) -> None:
        """`node` finished a step or its attempt (engine.dispatch). Where that changes the leader
        of its stage while the next stage is speculative, what grew from the old leader is
        discarded now: waiting for the next proposal let its queued or running jobs hold slots
        (a traced run: a speculative experiment from an overtaken leader ran for 5.5 s)."""
        stage, nxt = node.stage, self.plan.after(node.stage) if node.stage in self._names else None
        spec = self.spec or self.journal.primary_metric
        if (
            nxt is None
            or spec is None
            or not self.cfg.search.speculate
            or node.idea != self.idea
            or node.kind in SUPPORT_KINDS
            or self._key(stage) in self.journal.stage_best
            or self._key(nxt) in self.journal.stage_started
            or not self.view(nxt).search
        ):
            return
        leader = self._leader(stage, spec)
        if leader is not None:
            self._follow_leader(stage, nxt, leader)

    def _standing(self, stage: str, leader: Node, spec: MetricSpec) -> float:
        """The share of the next stage's budget that may grow from the leader now: the share of
        the stage's contenders that can no longer beat it (were their outcomes exchangeable,
        the chance that it stays the best). Each change of leader discards the set grown from
        the old one, so growing the whole set from the first node in paid for thinks that were
        nearly all thrown away."""
        v = self.view(stage)
        root = self._kept_root(stage)
        contenders = len(v.search) + (root is not None)
        floor = self._reported(leader, spec)
        assert floor is not None
        out = [n for n in v.unfinished.values() if n.id != leader.id]
        if root is not None and not root.is_finished and root.id != leader.id:
            out.append(root)
        return (contenders - len(self._may_beat(out, floor, spec))) / contenders

    def _discard_speculation(self, stage: str, best: Node | None) -> None:
        """The next stage's speculative nodes that did not grow from the decided best."""
        nxt = self.plan.after(stage)
        if nxt is None:
            return
        for n in self.search_nodes(nxt):
            premise = self._premise(n)
            if n.origin.speculative and (best is None or premise != best.id):
                self.journal.discard(
                    n.id,
                    f"speculative: grew from {premise}, but {stage}'s best is {best.id if best else 'none'}",
                )

    def _premise(self, node: Node) -> str | None:
        """The earlier stage's node that `node`'s line grew from: its parent, or, for a child of
        a node of its own stage (a tuning of a tuning), that node's premise. Speculative nodes
        are kept or discarded by it, so children grown from speculative nodes go with them."""
        while node.parent_id is not None and self.journal.nodes[node.parent_id].stage == node.stage:
            node = self.journal.nodes[node.parent_id]
        return node.parent_id

    def _aggregate(self, stage: str, best: Node, replicates: list[Node]) -> Node:
        refs = [best.id] + [r.id for r in replicates]
        return Node(
            parent_id=best.id,
            stage=stage,
            kind=AGGREGATION,
            idea=self.idea,
            plan=f"aggregate {len(replicates)} seed replicates of {best.id}",
            refs=refs,
        )

    # -- running ------------------------------------------------------------------------
    def job_for(self, node: Node, attempt: int) -> Job:
        if node.kind == SELECTION:
            assert self.chooser is not None
            spec = self.spec or self.journal.primary_metric
            assert spec is not None
            return self.chooser.job_for(node, attempt, [self.journal.nodes[r] for r in node.refs], spec)
        if node.kind == AGGREGATION:
            return AggregationJob(
                node_id=node.id,
                attempt=attempt,
                run_dir=self.journal.log.path.parent,
                title=f"{self.idea} · {node.stage}",
                metrics=self.journal.metric_specs,
                groups=self._groups(node),
            )
        return self.search.job_for(node, attempt)

    def _values(self, nodes: list[Node]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {m.name: [] for m in self.journal.metric_specs}
        for n in nodes:
            if n.status == NodeStatus.GOOD:
                for name in out:
                    v = n.metric(name)
                    if v is not None:
                        out[name].append(v)
        return out

    def _groups(self, agg: Node) -> dict[str, dict[str, list[float]]]:
        """Replicates of this stage's best (the subject; the selected run itself is left out
        to avoid the winner's curse), then earlier stages' replicated bests for comparison,
        and in the ablation stage every ablation's own result."""
        j = self.journal
        best = j.nodes[agg.refs[0]]
        reps = [j.nodes[r] for r in agg.refs[1:]]
        subject = (
            self._values(reps) if any(r.status == NodeStatus.GOOD for r in reps) else self._values([best])
        )
        groups = {f"{self.search.label(best)} (best of {agg.stage})": subject}
        for s in self.plan.before(agg.stage)[::-1]:
            ended = j.stage_ended.get(self._key(s))
            if ended and ended.aggregate_node_id:
                prev = j.nodes[ended.aggregate_node_id]
                groups[f"{self.search.label(j.nodes[prev.refs[0]])} (best of {s})"] = self._values(
                    [j.nodes[r] for r in prev.refs[1:]]
                )
                break
        if self.plan[agg.stage].from_root_only:
            for n in self.search_nodes(agg.stage):
                if n.id != best.id and n.status == NodeStatus.GOOD:
                    groups[self.search.label(n)] = self._values([n])
        return groups
