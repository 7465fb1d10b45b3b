"""Allocation across the ideas of a forest: which ideas get the free slots, and which stop.

- `fair` (default): every live idea gets an equal share of the slots; an idea that cannot use
  its share passes it on.
- `successive_halving`: asynchronous successive halving over ideas, in the manner of ASHA (Li et
  al., MLSys 2020). The rungs are points of the idea's `StagePlan` (`plan_rungs`): each stage's
  end, its best-node decision (`rungs: stage_ends`), or points inside each search stage after
  min_rung_nodes, x eta, x eta^2 ... of its search nodes, ASHA's resource levels (`geometric`),
  or both; an idea's stage holds no more search nodes than its next rung inside it until the
  idea goes on from that rung. An idea that reaches a rung goes on only if its progress score
  there is in the top 1/eta of the ideas that reached that rung so far; otherwise it waits (no
  slots) until more ideas arrive and it makes the cut, or until no live idea can still reach
  the rung, when it is stopped. A stopped idea's unspent share of the GPU budget returns to
  the pool, and, as in ASHA, what stopped ideas leave goes to the promoted ones: a promoted
  idea's current search stage gets more nodes in proportion to its grown share of the pool (an
  `extended` decision), and free slots go to the ideas at the highest rung first (ASHA's
  promotions before new work), after one slot to each idle idea (so a rung arrival is recorded
  when it happens). Pinned ideas are never held, never wait, never stop; at least `min_ideas`
  ideas are never stopped.
- `bandit`: ideas as arms; reward = improvement of the idea's best oriented metric over its
  baseline, per GPU-hour it spent; an upper-confidence rule picks where free slots go, and an
  idea below `min_share` of an equal share of GPU time is served first so none starves.

The progress score is declared by the search mode (`StagePlan.progress`, a name in
PROGRESS_SCORES; `allocation.progress` overrides it), never by stage name: the best metric so
far for a template's variants (one task), the gain over the idea's own baseline for agentic
ideas. Every decision is an `allocation` event with the numbers it used; state is rebuilt from
those events on resume.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from engine.budgets import ComputeMeter
from engine.dispatch import Finish
from engine.events import AllocationDecided, AttemptFinished, IdeaStopped, NodeCreated, StageBest
from engine.journal import Journal
from engine.node import MetricSpec, Node
from search.config import AllocationConfig, IdeaBudgets
from search.plan import StagePlan
from search.stages import SUPPORT_KINDS


class Tree(Protocol):
    @property
    def name(self) -> str: ...

    def inflight(self) -> int: ...


T = TypeVar("T", bound=Tree)


# -- rungs --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rung:
    """Where successive halving compares ideas: after the first `nodes` search nodes of `stage`
    (a rung inside the stage), or at the stage's best-node decision (`nodes` None)."""

    stage: str
    nodes: int | None = None

    def where(self) -> str:
        if self.nodes is None:
            return f"the end of stage {self.stage}"
        return f"{self.nodes} search node(s) of stage {self.stage}"


def plan_rungs(
    plan: StagePlan, cfg: AllocationConfig, stage_nodes: Mapping[str, int] | None
) -> tuple[Rung, ...]:
    """The rungs of a plan, in the order an idea reaches them. `stage_ends`: each stage's end but
    the last (that is the idea's finish). `geometric`: inside each search stage, after
    min_rung_nodes x eta^k of its search nodes, below its configured number (ASHA's resource
    levels); not inside the first stage (its best is what the progress score is measured from)
    nor inside a stage that runs a fixed list from its root (ablations: nothing to search).
    `geometric_and_stage_ends`: both."""
    out: list[Rung] = []
    for k, spec in enumerate(plan.stages):
        size = (stage_nodes or {}).get(spec.name)
        if cfg.rungs != "stage_ends" and k > 0 and not spec.from_root_only and size is not None:
            n, level = cfg.min_rung_nodes, 0
            while n < size:
                out.append(Rung(spec.name, n))
                level += 1
                n = max(n + 1, round(cfg.min_rung_nodes * cfg.eta**level))
        if cfg.rungs != "geometric" and spec.name != plan.last:
            out.append(Rung(spec.name))
    return tuple(out)


def rung_nodes(journal: Journal, idea: str, rung: Rung) -> list[Node]:
    """The first `rung.nodes` search nodes of the rung's stage, oldest first (all of the stage's
    nodes for a stage-end rung): what the idea is judged on there, the same whenever it is read."""
    nodes = [n for n in journal.in_stage(rung.stage, idea=idea) if n.kind not in SUPPORT_KINDS]
    return nodes if rung.nodes is None else nodes[: rung.nodes]


def reached(journal: Journal, idea: str, rung: Rung) -> bool:
    """A stage-end rung: the stage's best node is decided. A rung inside a stage: its first
    `nodes` search nodes are all finished, or the stage was decided with fewer."""
    decided = journal.stage_best.get((idea, rung.stage))
    if rung.nodes is None:
        return decided is not None and decided.node_id is not None
    if decided is not None:
        return True
    nodes = rung_nodes(journal, idea, rung)
    return len(nodes) == rung.nodes and all(n.is_finished for n in nodes)


# -- progress scores, by the name a StagePlan declares ---------------------------------------
ProgressScore = Callable[[Journal, StagePlan, str, Rung, MetricSpec], float | None]


def _value(decision: StageBest | None) -> float | None:
    return decision.value if decision is not None else None


def relative(value: float | None, baseline: float | None) -> float | None:
    """Improvement of an oriented value over the oriented baseline, in units of the baseline."""
    if value is None or baseline is None:
        return None
    return (value - baseline) / (abs(baseline) if abs(baseline) > 1e-12 else 1.0)


def best_so_far(journal: Journal, plan: StagePlan, idea: str, rung: Rung, spec: MetricSpec) -> float | None:
    """The idea's best validation metric so far, oriented: the decided bests of the stages
    before the rung's, and the rung's own stage's decided best (a stage-end rung, or a stage
    decided before it had the rung's number of search nodes) or the best of its first `nodes`
    search nodes. Not normalized: for ideas that share one task and metric (a template's
    variants) the level reached is what the run is after. The baseline is among those values,
    so a stage whose search only found worse settings leaves the idea where it was (one unlucky
    tuning draw must not rank a good idea below a hopeless one)."""
    best = journal.stage_best
    values = [spec.oriented(_value(best.get((idea, s)))) for s in plan.before(rung.stage)]
    nodes = rung_nodes(journal, idea, rung) if rung.nodes is not None else []
    if rung.nodes is None or len(nodes) < rung.nodes:
        values.append(spec.oriented(_value(best.get((idea, rung.stage)))))
    else:
        values += [spec.score(n) for n in nodes]
    return max((v for v in values if v is not None), default=None)


def best_over_baseline(
    journal: Journal, plan: StagePlan, idea: str, rung: Rung, spec: MetricSpec
) -> float | None:
    """`best_so_far` relative to the idea's baseline node (the best node of the plan's first
    stage), never below zero: for ideas that are each their own experiment (agentic), whose
    metrics may have other scales."""
    base = spec.oriented(_value(journal.stage_best.get((idea, plan.first))))
    return relative(best_so_far(journal, plan, idea, rung, spec), base)


PROGRESS_SCORES: dict[str, ProgressScore] = {
    "best_over_baseline": best_over_baseline,
    "best_so_far": best_so_far,
}


def register_progress_score(name: str, score: ProgressScore) -> None:
    """A search mode's own score (search/modes.py `Mode.progress_scores`)."""
    if PROGRESS_SCORES.get(name, score) is not score:
        raise ValueError(f"progress score {name!r} is already registered")
    PROGRESS_SCORES[name] = score


@dataclass(frozen=True)
class IdeaInfo:
    name: str
    spec: MetricSpec | None  # the idea's primary metric
    budgets: IdeaBudgets


# -- successive halving: the decision on hand-made or journaled scores ------------------------
@dataclass(frozen=True)
class RungDecision:
    decision: str  # promoted | waiting | stopped
    k: int  # how many of the rung's ideas go on
    threshold: float  # the k-th best score at the rung
    why: str


def rung_decision(
    score: float | None,
    scores: Sequence[float | None],
    eta: float,
    *,
    pinned: bool,
    final: bool,
    keep: bool,
) -> RungDecision:
    """Whether an idea with `score` goes on from a rung whose ideas so far scored `scores` (its
    own included). `final`: no live idea can still reach the rung; `keep`: stopping it would leave
    fewer than the minimum number of ideas. A missing score ranks last; ties go on.

    As in ASHA, k = floor(n / eta) of the n ideas at the rung go on, so the first arrivals wait
    until enough others arrive; once the rung is final at least one goes on."""
    ranked = sorted((-math.inf if s is None else s for s in scores), reverse=True)
    k = math.floor(len(ranked) / eta)
    if final:
        k = max(1, k)
    threshold = ranked[k - 1] if k else math.inf
    mine = -math.inf if score is None else score
    if pinned:
        return RungDecision("promoted", k, threshold, "pinned")
    if k and mine >= threshold:
        return RungDecision("promoted", k, threshold, f"in the top {k} of {len(ranked)}")
    if not final:
        return RungDecision("waiting", k, threshold, f"not in the top {k} of {len(ranked)} so far")
    if keep:
        return RungDecision("promoted", k, threshold, "kept: the minimum number of ideas")
    return RungDecision(
        "stopped", k, threshold, f"not in the top {k} of the {len(ranked)} ideas at this rung"
    )


@dataclass
class _Arm:
    baseline: float | None = None
    best: float | None = None  # oriented
    pulls: int = 0  # finished jobs


@dataclass
class Allocation:
    """The forest's allocation policy. `live` filters the trees that may receive slots this
    round (journaling decisions), `plan` orders them with each one's target in-flight count."""

    cfg: AllocationConfig
    journal: Journal
    plan_: StagePlan
    ideas: list[IdeaInfo]
    meter: ComputeMeter | None = None
    # The run's search nodes per stage: where geometric rungs go, and what successive halving
    # extends for promoted ideas (None: no rungs inside stages, stage budgets stay as configured).
    stage_nodes: Mapping[str, int] | None = None
    stopped: dict[str, str] = field(default_factory=dict)  # idea -> why
    # Rungs by their 1-based index in `rungs`:
    promoted: dict[str, int] = field(default_factory=dict)  # idea -> highest rung it went on from
    waiting: dict[str, int] = field(default_factory=dict)  # idea -> rung it waits at
    scores: dict[int, dict[str, float | None]] = field(default_factory=dict)  # rung -> idea -> score
    arms: dict[str, _Arm] = field(default_factory=dict)
    extended: dict[tuple[str, str], int] = field(default_factory=dict)  # (idea, stage) -> search nodes
    _offset: int = 0
    _last_rank: Any = None

    def __post_init__(self) -> None:
        self.by_name = {i.name: i for i in self.ideas}
        self.index = {i.name: k for k, i in enumerate(self.ideas)}
        self.arms = {i.name: _Arm() for i in self.ideas}
        self.node_idea: dict[str, str] = {}
        self.decided: list[str] = []  # ideas decided about since the forest last looked
        self.open: set[str] = set(self.index)  # ideas neither finished nor stopped, as of the last round
        score = self.cfg.progress or self.plan_.progress
        if self.cfg.policy != "fair" and (score is None or score not in PROGRESS_SCORES):
            raise ValueError(
                f"allocation {self.cfg.policy!r}: the {self.plan_.mode} mode declares no progress score"
            )
        self.progress = PROGRESS_SCORES[score] if score is not None else None
        if self.cfg.rungs != "stage_ends" and self.stage_nodes is None:
            raise ValueError("geometric rungs need the stages' search nodes (stage_nodes)")
        self.rungs = plan_rungs(self.plan_, self.cfg, self.stage_nodes)
        self.rung_index = {r: k for k, r in enumerate(self.rungs, start=1)}
        self._reached: dict[str, int] = {}  # idea -> rungs reached so far (only ever grows)
        made = False
        for e in self.journal.log.read(AllocationDecided):  # a resumed run: decisions already made stand
            self._replay(e)
            made = True
        if not made:
            self._record(
                decision="policy",
                policy=self.cfg.policy,
                ideas=len(self.ideas),
                eta=self.cfg.eta,
                min_ideas=self.cfg.min_ideas,
                **(
                    {"rungs": [r.where() for r in self.rungs], "progress": score}
                    if self.cfg.policy == "successive_halving"
                    else {}
                ),
            )

    def add(self, info: IdeaInfo) -> None:
        """A rolling forest admitted a new idea (search/rolling.py): it competes from now on."""
        self.ideas.append(info)
        self.by_name[info.name] = info
        self.index[info.name] = len(self.index)
        self.arms[info.name] = _Arm()
        self.open.add(info.name)

    # -- journal ----------------------------------------------------------------------------
    def _record(self, **data: Any) -> None:
        event = AllocationDecided(**data)
        self.journal.record(event)
        if event.idea is not None:  # a decision about an idea may let its tree propose again
            self.decided.append(event.idea)

    def _replay(self, e: AllocationDecided) -> None:
        idea, decision = e.idea, e.decision
        if idea is None:
            return
        if decision == "stopped":
            self.stopped[idea] = e.reason or ""
        elif decision == "extended" and e.stage is not None and e.max_nodes is not None:
            self.extended[(idea, e.stage)] = e.max_nodes
        if e.rung is None or e.stage is None:
            return
        # Rungs are matched by where they are, not by index: the index is this plan's.
        r = self.rung_index.get(Rung(e.stage, e.nodes))
        if r is None:
            return
        if decision == "promoted":
            self.promoted[idea] = max(self.promoted.get(idea, 0), r)
            self.waiting.pop(idea, None)
        elif decision == "waiting":
            self.waiting[idea] = r
        self.scores.setdefault(r, {})[idea] = e.score

    def _tail(self) -> None:
        """Fold new journal events into the bandit's arms (incremental: cost per event, not per run)."""
        log = self.journal.log
        for e in log.read(NodeCreated, AttemptFinished, StageBest, start=self._offset):
            if isinstance(e, NodeCreated):
                self.node_idea[e.node.id] = e.node.idea
            elif isinstance(e, AttemptFinished):
                idea = self.node_idea.get(e.node_id)
                arm = self.arms.get(idea or "")
                info = self.by_name.get(idea or "")
                if arm is None or info is None or info.spec is None:
                    continue
                arm.pulls += 1
                if e.result.status == "good":
                    value = next((m.value for m in e.result.metrics if m.name == info.spec.name), None)
                    o = info.spec.oriented(value)
                    if o is not None and (arm.best is None or o > arm.best):
                        arm.best = o
            elif isinstance(e, StageBest) and e.stage == self.plan_.first and e.idea in self.arms:
                info = self.by_name[e.idea]
                self.arms[e.idea].baseline = info.spec.oriented(e.value) if info.spec else None
        self._offset = log.count

    # -- budgets ----------------------------------------------------------------------------
    def gpu_hours(self, idea: str) -> float:
        return self.meter.spend.by_idea[idea].gpu_hours if self.meter is not None else 0.0

    def share(self) -> float | None:
        """Each open idea's share of the run's GPU budget: what stopped and finished ideas did not
        spend returns to the pool."""
        if self.meter is None or self.meter.budgets.gpu_hours is None:
            return None
        open_ = [i.name for i in self.ideas if i.name in self.open and i.name not in self.stopped]
        closed = [i.name for i in self.ideas if i.name not in open_]
        left = self.meter.budgets.gpu_hours - sum(self.gpu_hours(i) for i in closed)
        return left / len(open_) if open_ else None

    def max_nodes(self, idea: str, stage: str, configured: int) -> int:
        """Search nodes of an idea's stage: the configured number, or more once extended; no
        more than its next rung inside the stage until the idea goes on from that rung."""
        n = max(configured, self.extended.get((idea, stage), configured))
        held = self.held_at(idea)
        return (
            min(n, held.nodes) if held is not None and held.stage == stage and held.nodes is not None else n
        )

    def held_at(self, idea: str) -> Rung | None:
        """The rung inside a stage that the idea's growth stops at until it goes on from there:
        its next rung, when that is one inside a stage (ASHA runs a configuration up to a rung's
        resource only). None under the other policies, for pinned ideas, and past the rungs."""
        if self.cfg.policy != "successive_halving" or self.by_name[idea].budgets.pinned:
            return None
        done = self.promoted.get(idea, 0)
        nxt = self.rungs[done] if done < len(self.rungs) else None
        return nxt if nxt is not None and nxt.nodes is not None else None

    def _over_own_budget(self, info: IdeaInfo) -> str | None:
        if self.meter is None:
            return None
        used = self.meter.spend.by_idea[info.name]
        b = info.budgets
        if b.gpu_hours is not None and used.gpu_hours >= b.gpu_hours:
            return (
                f"idea {info.name}: GPU-hour budget of {b.gpu_hours:g} used up ({used.gpu_hours:.3f} spent)"
            )
        if b.cpu_hours is not None and used.cpu_hours >= b.cpu_hours:
            return (
                f"idea {info.name}: CPU-hour budget of {b.cpu_hours:g} used up ({used.cpu_hours:.3f} spent)"
            )
        return None

    def _stop(self, idea: str, reason: str, **numbers: Any) -> None:
        share = self.share()
        info = self.by_name[idea]
        own = info.budgets.gpu_hours if info.budgets.gpu_hours is not None else share
        returned = max(0.0, own - self.gpu_hours(idea)) if own is not None else None
        self.stopped[idea] = reason
        self._record(
            idea=idea,
            decision="stopped",
            reason=reason,
            gpu_hours=self.gpu_hours(idea),
            returned_gpu_hours=returned,
            share_after=self.share(),
            **numbers,
        )
        if idea not in self.journal.idea_stopped:
            self.journal.record(IdeaStopped(idea=idea, reason=reason))

    # -- the Forest's hooks -------------------------------------------------------------------
    def ended(self, idea: str) -> Finish | None:
        why = self.stopped.get(idea)
        return Finish("stopped", why) if why is not None else None

    def live(self, active: Sequence[T]) -> list[T]:
        """The active trees that may receive slots now (decisions are journaled as they are made)."""
        if self.cfg.policy == "bandit":  # only the bandit keeps score of every result
            self._tail()
        self.open = {t.name for t in active}
        for t in active:
            if t.name not in self.stopped:
                why = self._over_own_budget(self.by_name[t.name])
                if why is not None:
                    self._stop(t.name, why, cause="idea budget")
        if self.cfg.policy == "successive_halving":
            self._halve([t for t in active if t.name not in self.stopped])
            self._fund_promoted(
                [t for t in active if t.name not in self.stopped and t.name not in self.waiting]
            )
        return [t for t in active if t.name not in self.stopped and t.name not in self.waiting]

    def plan(self, live: Sequence[T], max_in_flight: int, among: int | None = None) -> list[tuple[T, int]]:
        """Trees in the order to ask them, each with the in-flight count it may fill up to.
        `among`: how many trees share the slots under `fair` (the forest passes only the trees
        that can propose now, but a share is of all open ones); default, the live ones."""
        if self.cfg.policy == "bandit":
            return self._bandit(live, max_in_flight)
        if self.cfg.policy == "successive_halving":
            # ASHA hands a free worker to the promotion at the highest rung first (its best score
            # first) and only then to work lower down: each tree may take every slot it can use,
            # in that order (tried: an equal share per tree matched fair less often in the bench).
            # But first, each tree with nothing in flight gets one slot: it may have reached a rung
            # that only its stage manager records (a stage's best-node decision is made when the
            # tree is asked), and ASHA compares an idea at a rung when it arrives, not once the
            # ideas above it leave a slot free (without this, in the bench, ideas started late
            # reached their first rung only after the first ideas had spent a third of the budget).
            def standing(t: T) -> tuple[float, ...]:
                r = self.promoted.get(t.name, 0)
                score = self.scores.get(r, {}).get(t.name)
                return (-r, -(score if score is not None else -math.inf), t.inflight(), self.index[t.name])

            ranked = sorted(live, key=standing)
            return [(t, 1) for t in ranked if t.inflight() == 0] + [
                (t, max_in_flight) for t in ranked if t.inflight()
            ]
        order = sorted(live, key=lambda t: (t.inflight(), self.index[t.name]))
        fair = math.ceil(max_in_flight / max(among or 0, len(order))) if order else 0
        return [(t, fair) for t in order]

    # -- successive halving -----------------------------------------------------------------
    def rung(self, idea: str) -> int:
        """How many of the rungs the idea has reached, in order."""
        r = self._reached.get(idea, 0)
        while r < len(self.rungs) and reached(self.journal, idea, self.rungs[r]):
            r += 1
        self._reached[idea] = r
        return r

    def _score(self, idea: str, rung: int) -> float | None:
        info = self.by_name[idea]
        if info.spec is None or self.progress is None:
            return None
        return self.progress(self.journal, self.plan_, idea, self.rungs[rung - 1], info.spec)

    def _halve(self, active: Sequence[Tree]) -> None:
        rungs = {t.name: self.rung(t.name) for t in active}
        for name, r in rungs.items():
            for k in range(1, r + 1):
                known = self.scores.setdefault(k, {})
                if name not in known:
                    known[name] = self._score(name, k)
        pending = sorted(
            ((r, n) for n, r in rungs.items() if r > 0 and self.promoted.get(n, 0) < r),
            key=lambda rn: (rn[0], self.index[rn[1]]),
        )
        for r, name in pending:
            scores = self.scores[r]
            could_arrive = any(rr < r for n, rr in rungs.items() if n not in self.stopped)
            alive = sum(1 for i in self.ideas if i.name not in self.stopped)
            d = rung_decision(
                scores[name],
                list(scores.values()),
                self.cfg.eta,
                pinned=self.by_name[name].budgets.pinned,
                final=not could_arrive,
                keep=alive <= self.cfg.min_ideas,
            )
            rung = self.rungs[r - 1]
            numbers = {
                "rung": r,
                "stage": rung.stage,
                "nodes": rung.nodes,
                "score": scores[name],
                "k": d.k,
                "threshold": d.threshold if math.isfinite(d.threshold) else None,
                "scores": dict(scores),
                "why": d.why,
            }
            if d.decision == "promoted":
                self.promoted[name] = r
                self.waiting.pop(name, None)
                self._record(idea=name, decision="promoted", **numbers)
            elif d.decision == "waiting":
                if self.waiting.get(name) != r:
                    self.waiting[name] = r
                    self._record(idea=name, decision="waiting", **numbers)
            else:
                self.waiting.pop(name, None)
                self._stop(
                    name,
                    f"stopped by successive halving at {rung.where()} "
                    f"(score {_fmt(scores[name])}, needed {_fmt(d.threshold)}: {d.why})",
                    cause="successive_halving",
                    **numbers,
                )

    def _fund_promoted(self, promoted: Sequence[Tree]) -> None:
        """ASHA: the resources stopped ideas free go to the promoted ones. A promoted idea's current
        search stage gets its configured nodes times its share of the pool over an equal share
        (budget / ideas); journaled each time that number grows, with the numbers behind it."""
        share = self.share()
        if (
            self.stage_nodes is None
            or share is None
            or self.meter is None
            or self.meter.budgets.gpu_hours is None
        ):
            return
        equal = self.meter.budgets.gpu_hours / len(self.ideas)
        growth = share / equal
        if growth <= 1.0:
            return
        for t in promoted:
            r = self.rung(t.name)
            if r == 0 or self.promoted.get(t.name, 0) != r:
                continue  # not yet past a rung, or at a rung still undecided
            stage = self._stage_after(r)
            configured = self.stage_nodes.get(stage)
            if (
                configured is None
                or self.plan_[stage].from_root_only
                or (t.name, stage) in self.journal.stage_best
            ):
                continue  # a stage that runs a fixed list (ablations) or is decided has nothing to extend
            nodes = math.ceil(configured * growth)
            if nodes > self.extended.get(
                (t.name, stage), configured
            ):  # not max_nodes: a held idea's cap is its rung
                self.extended[(t.name, stage)] = nodes
                self._record(
                    idea=t.name,
                    decision="extended",
                    stage=stage,
                    max_nodes=nodes,
                    configured=configured,
                    growth=round(growth, 6),
                    share=share,
                    equal_share=equal,
                )

    def _stage_after(self, r: int) -> str:
        """The stage an idea searches once it has gone on from rung r: the rung's own stage for a
        rung inside it, the next stage after a stage-end rung (never the last stage's end)."""
        rung = self.rungs[r - 1]
        return (
            rung.stage if rung.nodes is not None else self.plan_.names[self.plan_.names.index(rung.stage) + 1]
        )

    # -- bandit -------------------------------------------------------------------------------
    def _bandit(self, live: Sequence[T], max_in_flight: int) -> list[tuple[T, int]]:
        if not live:
            return []
        spent = {t.name: self.gpu_hours(t.name) for t in live}
        mean = sum(spent.values()) / len(live)
        rates: dict[str, float] = {}
        for t in live:
            arm = self.arms[t.name]
            gain = relative(arm.best, arm.baseline)
            if gain is not None and arm.pulls:
                rates[t.name] = max(0.0, gain) / max(spent[t.name], 1e-6)
        top = max(rates.values(), default=0.0)
        total = sum(self.arms[t.name].pulls for t in live)
        ucb: dict[str, float] = {}
        for t in live:
            arm = self.arms[t.name]
            if t.name not in rates:
                ucb[t.name] = math.inf  # not yet measured: explore it
                continue
            bonus = self.cfg.exploration * math.sqrt(math.log(max(total, 2)) / arm.pulls)
            ucb[t.name] = (rates[t.name] / top if top > 0 else 0.0) + bonus
        starving = [t for t in live if spent[t.name] < self.cfg.min_share * mean]
        rest = sorted(
            (t for t in live if t not in starving), key=lambda t: (-ucb[t.name], self.index[t.name])
        )
        unexplored = [t for t in rest if math.isinf(ucb[t.name])]
        explored = [t for t in rest if not math.isinf(ucb[t.name])]
        plan = [(t, 1) for t in starving + unexplored]
        plan += [(t, max_in_flight if k == 0 else 0) for k, t in enumerate(explored)]
        rank = (tuple(t.name for t in starving), tuple(t.name for t in explored[:1]))
        if rank != self._last_rank:  # journaled when the choice changes, with the numbers behind it
            self._last_rank = rank
            self._record(
                decision="bandit",
                first=rank[1][0] if rank[1] else None,
                starving=list(rank[0]),
                arms={
                    t.name: {
                        "ucb": None if math.isinf(ucb[t.name]) else round(ucb[t.name], 6),
                        "rate": rates.get(t.name),
                        "gpu_hours": spent[t.name],
                        "pulls": self.arms[t.name].pulls,
                    }
                    for t in live
                },
            )
        return plan


def _fmt(v: float | None) -> str:
    return "none" if v is None or not math.isfinite(v) else f"{v:.4g}"
