"""Where a plan's durations, outcomes, metric values and LLM calls come from: a previous run's
journal and ledger (`--from`, or its replay), else the settings' distributions."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from engine.errors import ConfigError
from engine.events import AttemptCancelled, AttemptFinished, AttemptStarted, StepFinished
from engine.journal import EVENTS_FILE, Journal
from engine.llm.ledger import read_records
from engine.node import MetricSpec, MetricValue, Node, NodeStatus
from search.agentic.operators.job import Proposed, Ran
from search.agentic.operators.outcome import OperatorOutcome, operator_outcome
from silva.config import RunConfig
from silva.plan.settings import LEDGER_FILE, LLM_STEPS, PlanSettings


class Seen(NamedTuple):
    """One node of the source run, as a replay hands it to its twin: what it showed before it
    finished, or before the run discarded it (None: that step never ended there)."""

    took: float | None  # its experiment's slot time
    buggy: bool
    metrics: list[MetricValue]
    proposal: tuple[bool, bool] | None = (False, False)  # its proposal failed; it had run out of variants
    converged: bool | None = False  # its judgement said tuning converged


class Source:
    """Durations, outcomes, metric values and LLM calls to draw from: a previous run's journal
    and ledger, or the settings' distributions."""

    def __init__(
        self,
        settings: PlanSettings,
        journal: Journal | None,
        ledger: Path | None = None,
        replay: bool = False,
    ) -> None:
        self.settings, self.replay = settings, replay
        self.took: dict[str, list[float]] = defaultdict(list)
        self.failed: dict[str, list[bool]] = defaultdict(list)
        self.metrics: dict[str, list[list[MetricValue]]] = defaultdict(list)
        self.calls: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
        # Every experiment's time and outcome, whatever its kind: what an experiment of a kind the
        # run happened not to make (a debug node after one bug) takes here. Not the defaults'
        # 20-minute median: one such draw stopped a 2-minute run's plan at its 1-hour budget.
        self.experiments: list[float] = []
        self.experiment_failed: list[bool] = []
        # Each step's time as the driver saw it, from its submission to its result journaled: an
        # experiment's slot time with sandbox start, result collection and dispatch (8.9 s for
        # 5.5 s of its own on 2 cores); an LLM step's prompt, calls, re-asks and parsing (2.0 s
        # for 0.4 s of the call's own at load 20: a plan of the calls alone ran chains too fast).
        # A step the run cancelled (its node discarded, the run stopped) had run this long by
        # then: it would have taken longer.
        self.spans, self.cut, self.own, self.began = _spans(journal)
        self.step_s: dict[str, list[float]] = defaultdict(list)
        self.step_w: dict[str, list[float]] = {}  # their weights, where the run cut some (`_to_the_right`)
        self.ran_s = self.held_s = 0.0  # experiments' own time, and the slot time it took
        # Replay: each planned node takes its twin's figures, the source's node of its idea and
        # kind in the same place of their order (created there, first started here: the same
        # but for slot-holding jobs queued across kinds); what differs then is the model's.
        self.order: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.twins: dict[str, str | None] = {}
        self.by_node: dict[str, Seen] = {}
        # What ends an agentic stage before its node budget, as the run's model answered: the
        # n-th proposal of a kind in an idea's stage that named only variants already tried, the
        # n-th good judgement that said tuning converged (None: never), and other proposals that
        # failed. Never drawn, a plan ran every tuning and ablation stage to its budget: 8 nodes
        # where the run made 6 and 4. Drawn once per stage of the plan, counted as it goes.
        self.ends_at: dict[tuple[str, str], list[int | None]] = defaultdict(list)
        self.proposal_failed: dict[str, list[bool]] = defaultdict(list)
        self.limit: dict[tuple[str, ...], int | None] = {}
        self.placed: dict[tuple[str, ...], list[Node]] = defaultdict(list)  # the stage's nodes so far
        self.node_calls: dict[tuple[str, str], list[tuple[float, int, int]]] = defaultdict(list)
        # Failures come together per idea: in both real runs of a forest of 4 at load 32, two
        # ideas lost every experiment of their first stage and stopped there, where a draw per
        # node at the pooled rate passed 0 to 4 ideas (+53% nodes). Each source idea's
        # experiments by kind, (slot time, failed) drawn together; each planned idea is like one
        # source idea, dealt in turn from a shuffled deck (each once before any twice), so a
        # plan of as many ideas loses as many whole ideas as the run did.
        self.idea_runs: dict[str, dict[str, list[tuple[float, bool]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.like: dict[str, str | bool] = {}  # planned idea: its source idea, or failing whole
        self.deck: list[str] = []
        self._read(journal, ledger)

    def _read(self, journal: Journal | None, ledger: Path | None) -> None:
        """Each finished node's figures, stage ends, LLM steps' spans and calls of the source run."""
        for n in journal or []:
            self.order[(n.idea, n.kind)].append(n.id)
            held = self.spans.get((n.id, "run")) or self.spans.get((n.id, "all")) or 0.0
            if n.status == NodeStatus.DISCARDED:
                if self.replay:
                    self._discarded(n, held)
            elif n.is_finished and n.finished_at:
                self._add(n, held)
        self._stage_ends(journal)
        # A proposal that failed took its re-asks' time (9 s for 2 s at load 20): drawn from
        # those, the one that ran out of ablations ended its stage before the others thought.
        # Its judgement calls no model (0.004 s): drawn for a judgement of a run, such ones
        # made the one-idea plans' judgements 4-19% shorter than the run's.
        for (node_id, step), took in self.spans.items():
            if step in LLM_STEPS:
                seen = self.by_node.get(node_id)
                failed = (
                    step in ("think", "judge")
                    and seen is not None
                    and bool(seen.proposal and seen.proposal[0])
                )
                self.step_s[f"{step}_failed" if failed else step].append(took)
        # The steps the run cut (discarded nodes' thinks and judgements) would have taken longer
        # than they had run, and the slow ones are those cut: a stage's end discards its
        # stragglers. Drawn from the finished spans alone, a one-idea plan's thinks at LLM latency
        # 4x averaged 12.8 s where 10 of the run's 38 had run 22.2 s when cut.
        cuts: dict[str, list[float]] = defaultdict(list)
        for (_, step), took in self.cut.items():
            if step in LLM_STEPS:
                cuts[step].append(took)
        for step, cut in cuts.items():
            self.step_s[step], self.step_w[step] = _to_the_right(self.step_s[step], cut)
        for r in read_records(ledger) if ledger is not None and ledger.is_file() else []:
            if r.attempts and not r.error and not r.cache_hit:
                self.calls[r.role].append((r.latency_s, r.input_tokens, r.output_tokens))
                if r.node_id is not None:
                    self.node_calls[(r.node_id, r.role)].append(self.calls[r.role][-1])

    def _add(self, n: Node, held: float, draws: bool = True) -> None:
        """A finished node of the source run: its time, outcome and what its model answered;
        in the draws unless not `draws` (a node discarded after it finished: replayed only)."""
        buggy = n.status == NodeStatus.BUGGY
        out = n.outcome_as(OperatorOutcome)
        if out is not None and "think" in n.steps:
            if draws:
                self.proposal_failed[n.kind].append(out.status_rule == "proposal" and not out.exhausted)
            if out.status_rule == "proposal":  # it ran nothing: no experiment time to draw
                self.by_node[n.id] = Seen(0.0, True, [], (True, out.exhausted))
                return
        converged = out is not None and out.judgement is not None and bool(out.judgement.converged)
        # An experiment's slot time; a job that runs no code (aggregation), its attempt.
        ran = n.execution.wall_s if n.execution is not None else 0.0
        assert n.finished_at is not None
        span = max(0.0, max(ran, held) or n.finished_at - (n.started_at or n.created_at))
        self.by_node[n.id] = Seen(span, buggy, n.metrics, converged=converged)
        if not draws:
            return
        self.took[n.kind].append(span)
        self.failed[n.kind].append(buggy)
        # A selection's or an aggregation's result has an empty execution: not an experiment (as
        # one, a forest's own share came out 0.85 for 0.97, and its plan's utilization with it).
        if n.execution is not None and ran > 0:
            self.ran_s, self.held_s = self.ran_s + ran, self.held_s + span
            self.experiments.append(span)
            self.experiment_failed.append(buggy)
        if buggy or (n.execution is not None and ran > 0):
            self.idea_runs[n.idea][n.kind].append((span, buggy))
        if n.status == NodeStatus.GOOD and n.metrics:
            self.metrics[n.kind].append(n.metrics)

    def _discarded(self, n: Node, held: float) -> None:
        """Replay: what a node the run discarded showed before it was, for its twin. Without
        it the twin drew its steps: a draft whose think the run cut at 8.5 s thought 3.2 s in
        the replay, ran, and the one-idea chain went its own way from there (+10% wall, +24%
        nodes). The draws leave discarded nodes out, as the plan's counts do."""
        if n.finished_at is not None:  # finished, then discarded
            self._add(n, held, draws=False)
            return
        thought, ran = n.steps.get("think"), n.steps.get("run")
        proposal = None
        if isinstance(thought, Proposed):
            proposal = (bool(thought.proposal_error), thought.exhausted)
        if isinstance(ran, Ran):
            took = max(ran.execution.wall_s, held)
            self.by_node[n.id] = Seen(took, bool(ran.run_problem), list(ran.metrics), proposal, None)
        else:
            self.by_node[n.id] = Seen(None, False, [], proposal, None)

    def _stage_ends(self, journal: Journal | None) -> None:
        """`ends_at`: in each idea's stage, how many of its proposals of a kind named a variant
        when one ran out of variants, and the place among their good judgements of the first
        that converged, in the order the judgements were asked for, as a plan counts them
        (`converges` is drawn when a judge step starts). In creation order, a run at LLM latency
        4x whose first-made tuning node was judged 7th of 8, and converged, was planned to
        converge at the first judgement: its plans ended the tuning stage at 5.6 nodes where the
        run made 8.

        Counted, not the place of the one that ran out: with look-ahead, proposals think
        together, and the first made may run out while those made beside it still name variants
        and run (in a forest at 4 slots, the first of four ran out and three ran). `_reached`
        makes every planned proposal from that place on run out: by place, such a stage ran none."""
        groups: dict[tuple[str, str, str], list[Node]] = defaultdict(list)
        for n in journal or []:
            if n.is_finished and n.status != NodeStatus.DISCARDED and "think" in n.steps:
                groups[(n.idea, n.stage, n.kind)].append(n)
        for (_, _, kind), nodes in groups.items():
            outs = [operator_outcome(n) for n in nodes]
            self.ends_at[("exhausted", kind)].append(
                sum(not o.exhausted for o in outs) if any(o.exhausted for o in outs) else None
            )
            good = [(n, o) for n, o in zip(nodes, outs, strict=True) if n.status == NodeStatus.GOOD]
            good.sort(key=lambda g: self.began.get((g[0].id, "judge"), g[0].finished_at or 0.0))
            judged = [o.judgement for _, o in good]
            if any(j is not None for j in judged):
                first = next((i for i, j in enumerate(judged) if j is not None and j.converged), None)
                self.ends_at[("converged", kind)].append(first)

    def _reached(self, what: str, node: Node, rng: random.Random) -> bool:
        """Whether `node`, the next of its kind in its idea's stage, is at or past where `what`
        (`exhausted`, `converged`) happens in that stage, a place drawn from the source run's.

        Its place counts the stage's nodes the plan has not discarded, as the source's places
        were counted: the run voids a discarded node's claim (its variant is free again), so the
        set a new leader grows names variants again. Counted with the discarded ones, a plan
        whose stage regrew from a new leader ran out at once: a one-idea ablation stage ran no
        experiment in 2 of 3 plans where its run ran 3 (the plan 20% short)."""
        key = (what, node.idea, node.stage, node.kind)
        if key not in self.limit:
            seen = self.ends_at.get((what, node.kind))
            self.limit[key] = rng.choice(seen) if seen else None
        limit = self.limit[key]
        if limit is None:
            return False  # the source never got there: nothing to count (a plan without --from)
        place = sum(n.status != NodeStatus.DISCARDED for n in self.placed[key])
        self.placed[key].append(node)
        return place >= limit

    @property
    def own_share(self) -> float:
        """The experiments' own time over the slot time they held (1 from the defaults)."""
        return self.ran_s / self.held_s if self.held_s > 0 else 1.0

    def twin(self, node: Node | None) -> str | None:
        """Replay: the source's node `node` replays (None: not replaying, or none left)."""
        if not self.replay or node is None:
            return None
        if node.id not in self.twins:
            left = self.order.get((node.idea, node.kind))
            self.twins[node.id] = left.pop(0) if left else None
        return self.twins[node.id]

    def replayed(self, node: Node | None) -> Seen | None:
        twin = self.twin(node)
        return self.by_node.get(twin) if twin is not None else None

    def own_time(self, node: Node, step: str) -> float | None:
        """Replay: the time `step` of `node`'s twin took by its own result (None: not known)."""
        twin = self.twin(node)
        return self.own.get((twin, step)) if twin is not None else None

    def _cut(self, node: Node | None, *steps: str) -> float | None:
        """Replay: how long the first of `steps` of `node`'s twin had run when the run cancelled it."""
        twin = self.twin(node)
        return next((self.cut[(twin, s)] for s in steps if twin is not None and (twin, s) in self.cut), None)

    def duration(self, kind: str, rng: random.Random, node: Node | None = None) -> float:
        if (own := self.replayed(node)) is not None and own.took is not None:
            return own.took
        if (cut := self._cut(node, "run", "all", kind)) is not None:
            return _beyond(self.took.get(kind) or self.experiments, cut, rng)
        if self.took.get(kind):
            return rng.choice(self.took[kind])
        d = self.settings.durations
        if kind not in d and self.experiments:
            return rng.choice(self.experiments)
        return (d.get(kind) or d["default"]).draw(rng)

    def experiment(self, kind: str, rng: random.Random, node: Node | None = None) -> tuple[float, bool]:
        """An experiment's slot time and whether it fails, drawn together from an experiment of
        its kind of the source idea its idea is like (`like`); of one failing whole, failed.
        Otherwise, or replayed, each on its own (`duration`, `buggy`)."""
        like = self._like(node.idea, rng) if node is not None and self.twin(node) is None else None
        if like is True:
            return self.duration(kind, rng, node), True
        if isinstance(like, str):
            # A kind its source idea never ran (a debug node where it had none) takes that idea's
            # other experiments: a source idea that failed whole fails here whatever the kind.
            kinds = self.idea_runs[like]
            return rng.choice(kinds.get(kind) or [seen for of_kind in kinds.values() for seen in of_kind])
        return self.duration(kind, rng, node), self.buggy(kind, rng, node)

    def _like(self, idea: str, rng: random.Random) -> str | bool | None:
        """The source idea whose outcomes planned `idea` takes (dealt once per idea), or without
        a source's: whether it fails whole (`ideas_failing`); None when neither is modelled."""
        if idea not in self.like:
            if self.idea_runs:
                if not self.deck:
                    self.deck = sorted(self.idea_runs)
                    rng.shuffle(self.deck)
                self.like[idea] = self.deck.pop()
            elif self.settings.ideas_failing > 0:
                self.like[idea] = rng.random() < self.settings.ideas_failing
            else:
                return None
        return self.like[idea]

    def good_rates(self) -> dict[str, float]:
        """Each source idea's share of good experiments, fitted from the journal."""
        out = {}
        for idea, kinds in sorted(self.idea_runs.items()):
            runs = [failed for seen in kinds.values() for _, failed in seen]
            out[idea] = 1 - sum(runs) / len(runs)
        return out

    def outcomes(self) -> str:
        """How the plan draws experiments' failures, in a line."""
        rates = self.good_rates()
        if self.replay:
            return "replayed: each node fails as its twin in the source run did"
        if rates:
            whole = sum(1 for r in rates.values() if r == 0)
            return (
                f"per idea: each planned idea fails as one of the source's {len(rates)} idea(s) did, "
                f"dealt in turn ({whole} lost every experiment; good rates "
                + ", ".join(f"{k} {v:.0%}" for k, v in rates.items())
                + ")"
            )
        if self.settings.ideas_failing > 0:
            return (
                f"per idea: {self.settings.ideas_failing:.0%} of ideas lose every experiment, the "
                "others' attempts fail on their own at their kind's share"
            )
        return "per attempt, each on its own at its kind's share"

    def buggy(self, kind: str, rng: random.Random, node: Node | None = None) -> bool:
        if (own := self.replayed(node)) is not None and own.took is not None:
            return own.buggy
        if self.failed.get(kind):
            return rng.choice(self.failed[kind])
        if kind not in self.settings.buggy and self.experiment_failed:
            return rng.choice(self.experiment_failed)
        # `default`, as in `durations`, is every experiment kind the settings do not name.
        return rng.random() < self.settings.buggy.get(kind, self.settings.buggy.get("default", 0.0))

    def values(
        self, kind: str, specs: Sequence[MetricSpec], rng: random.Random, node: Node | None = None
    ) -> list[MetricValue]:
        if (own := self.replayed(node)) is not None and own.metrics:
            return [m.model_copy() for m in own.metrics]
        seen = self.metrics.get(kind) or [ms for of_kind in self.metrics.values() for ms in of_kind]
        if seen:
            return [m.model_copy() for m in rng.choice(seen)]
        return [MetricValue(name=s.name, value=rng.gauss(0.0, 1.0), direction=s.direction) for s in specs]

    def proposal(self, kind: str, rng: random.Random, node: Node | None = None) -> tuple[bool, bool]:
        """Whether a think step's proposal fails, and whether it named only variants already
        tried (which ends the stage), as the source run's proposals of `kind` did."""
        if (own := self.replayed(node)) is not None and own.proposal is not None:
            return own.proposal
        if node is not None and self._reached("exhausted", node, rng):
            return True, True
        seen = self.proposal_failed.get(kind)
        return (rng.choice(seen), False) if seen else (False, False)

    def converges(self, kind: str, rng: random.Random, node: Node | None = None) -> bool:
        """Whether a good run's judgement says tuning converged, as the source run's of `kind` did."""
        if (own := self.replayed(node)) is not None and own.converged is not None:
            return own.converged
        return node is not None and self._reached("converged", node, rng)

    def step_time(
        self, step: str, rng: random.Random, node: Node | None, calls_s: float, failed: bool = False
    ) -> float:
        """An LLM step's time (`LLM_STEPS`; a think or judge step's whose proposal `failed`): as
        the source run's driver saw such steps (replayed, its twin's; one the run cut, longer),
        else `calls_s`, its calls' latencies."""
        twin = self.twin(node)
        if twin is not None and (twin, step) in self.spans:
            return self.spans[(twin, step)]
        key = f"{step}_failed" if failed and self.step_s.get(f"{step}_failed") else step
        seen = self.step_s.get(key)
        if (cut := self._cut(node, step)) is not None:
            return _beyond(seen or [calls_s], cut, rng)
        if not seen:
            return calls_s
        weights = self.step_w.get(key)
        return rng.choices(seen, weights)[0] if weights else rng.choice(seen)

    def call(self, role: str, rng: random.Random, node: Node | None = None) -> tuple[float, int, int]:
        """One call of `role`: (latency s, input tokens, output tokens); replayed, the twin's next."""
        twin = self.twin(node)
        if twin is not None and self.node_calls.get((twin, role)):
            return self.node_calls[(twin, role)].pop(0)
        if self.calls.get(role):
            return rng.choice(self.calls[role])
        r = self.settings.llm.get(role) or self.settings.llm["feedback"]
        return r.latency.draw(rng), r.input_tokens, r.output_tokens

    def calls_per_job(self, role: str) -> int:
        r = self.settings.llm.get(role)
        return r.calls if r is not None else 1


def _beyond(seen: Sequence[float], cut: float, rng: random.Random) -> float:
    """A step's time given that it ran longer than `cut` (the run cancelled it then): one of
    `seen` that is longer, else `cut` and one of `seen` more."""
    longer = [s for s in seen if s > cut]
    return rng.choice(longer) if longer else cut + (rng.choice(seen) if seen else cut)


def _to_the_right(spans: Sequence[float], cuts: Sequence[float]) -> tuple[list[float], list[float]]:
    """Spans to draw from, and their weights, given `cuts`, the times of steps cancelled before
    they ended: the Kaplan-Meier estimate (scipy.stats.ecdf of right-censored data; a cut's
    share goes to the times longer than it). What it leaves beyond the longest span goes to the
    longest cut, a span of its own time (at least that long)."""
    from scipy.stats import CensoredData, ecdf  # only a plan from a run that cut steps needs it

    if not spans:
        return [max(cuts)], [1.0]
    cdf = ecdf(CensoredData(uncensored=spans, right=cuts)).cdf
    values: list[float] = []
    weights: list[float] = []
    below = 0.0
    for took, reached in zip(cdf.quantiles, cdf.probabilities, strict=True):
        if reached > below:  # a cut's own time gets no weight
            values.append(float(took))
            weights.append(float(reached) - below)
        below = float(reached)
    if below < 1.0 - 1e-12:
        values.append(max(cuts))
        weights.append(1.0 - below)
    return values, weights


Steps = dict[tuple[str, str], float]  # (node, step) -> seconds


def _spans(journal: Journal | None) -> tuple[Steps, Steps, Steps, Steps]:
    """Each finished step's span in the run, from the driver's submission to its result
    journaled, by (node, step) (a one-job attempt's step is its node kind: a selection); each
    step the run cancelled, by how long it had run by then; each finished step's own time,
    as its result says (what the driver's look-ahead is measured on); and when each finished
    step was submitted."""
    out: Steps = {}
    cut: Steps = {}
    own: Steps = {}
    at: Steps = {}
    if journal is None:
        return out, cut, own, at
    began: dict[tuple[str, int], tuple[float, str]] = {}
    for e in journal.log.read(AttemptStarted, StepFinished, AttemptFinished, AttemptCancelled):
        assert isinstance(e, AttemptStarted | StepFinished | AttemptFinished | AttemptCancelled)
        key = (e.node_id, e.attempt)
        if isinstance(e, AttemptStarted):
            began[key] = (e.ts, e.step or journal.nodes[e.node_id].kind)
        elif key in began:
            t0, step = began.pop(key)
            (cut if isinstance(e, AttemptCancelled) else out)[(e.node_id, step)] = max(0.0, e.ts - t0)
            if not isinstance(e, AttemptCancelled):
                own[(e.node_id, step)] = max(0.0, e.result.finished_at - e.result.started_at)
                at[(e.node_id, step)] = t0
    return out, cut, own, at


def check_source(from_dir: Path, cfg: RunConfig) -> Journal:
    """The previous run to draw from: a Silva run directory, with its LLM ledger when the
    planned run calls an LLM."""
    if not (from_dir / EVENTS_FILE).is_file():
        raise ConfigError(
            f"--from {from_dir}: not a Silva run directory (no {EVENTS_FILE}); pass a directory "
            "`silva run` made, or leave --from out to plan from the documented defaults"
        )
    if cfg.llm is not None and not (from_dir / LEDGER_FILE).is_file():
        raise ConfigError(
            f"--from {from_dir}: no {LEDGER_FILE}, so no LLM latencies or tokens to plan from; pass "
            "a run that called an LLM, or leave --from out to plan from the documented defaults"
        )
    return Journal.open(from_dir, read_only=True)
