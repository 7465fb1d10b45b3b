"""The LLM search phase of each stage for one idea: a `StageSearch` driven by a policy.

- preliminary: drafts, debugging and improvements; ends at the first good node.
- hyperparameter: new settings on the working code (tried ones never repeated); ends when the
  LLM's judgement of a tuning run says tuning has converged (after `min_tuning_nodes`).
- agenda: improvements towards the idea's planned experiments (crossover under evolution).
- ablation: one component removed or replaced at a time, each at most once.
Budgets (StageManager) end stages 2-4 otherwise. A node's work is its think, run and judge jobs
(search/agentic/operators/job.py).
With a template (search/template/seed.py), stage 1 starts from the template's code, not drafts.
"""

from __future__ import annotations

import dataclasses
import sys

from engine.executor import Job
from engine.journal import Journal
from engine.llm import LLM
from engine.llm.prices import resolve_model
from engine.node import MetricSpec, Node, NodeStatus, Origin
from sandbox.base import Limits
from search.agentic.operators.claims import ClaimBook
from search.agentic.operators.frozen import Asked, asked
from search.agentic.operators.job import (
    LLM_OPERATORS,
    Ask,
    Attempt,
    CycleJob,
    JudgeJob,
    Proposed,
    Ran,
    Review,
    RunJob,
    Step,
    ThinkJob,
)
from search.agentic.operators.outcome import OperatorOutcome, operator_outcome, variant
from search.agentic.operators.prompts import CodeRequest, code_prompt, contract, fmt_metrics
from search.agentic.plan import PLAN
from search.config import SearchSettings
from search.idea import Idea
from search.policies import get_policy
from search.template.seed import TemplateSeed, template_start
from search.tree import SUPPORT_KINDS, StageView

HISTORY = 12  # other nodes of the stage shown in a prompt: the most recent ones
PLOT_TIMEOUT_S = 120.0


class AgenticSearch:
    def __init__(
        self,
        cfg: SearchSettings,
        journal: Journal,
        idea: Idea,
        llm: LLM,
        *,
        vision: bool,
        template: TemplateSeed | None = None,
    ) -> None:
        self.cfg, self.journal, self.idea, self.llm, self.vision = cfg, journal, idea, llm, vision
        self.template = template  # a template-based idea: stage 1 grows from the template's code
        self.policy = get_policy(cfg.search.policy)
        self.run_dir = journal.log.path.parent

    @property
    def spec(self) -> MetricSpec:
        return self.idea.primary

    def nodes(self, stage: str) -> list[Node]:
        return [n for n in self.journal.in_stage(stage, idea=self.idea.name) if n.kind not in SUPPORT_KINDS]

    # -- StageSearch ----------------------------------------------------------------------------
    def propose(self, journal: Journal, stage: str, root: Node | None, slots: int) -> list[Node]:
        if self.template is not None and stage == PLAN.first:
            start = template_start(
                self.template,
                journal,
                self.idea.name,
                stage,
                self.nodes(stage),
                self.cfg.seed,
                self.cfg.search.max_debug_depth,
            )
            if start is not None:
                return start[:slots]
        view = StageView(journal, self.idea.name, stage, root, self.spec, self.cfg.search, self.cfg.seed)
        out = []
        for e in self.policy.propose(view, slots):
            target = f" of {e.parent.id}" if e.parent is not None else ""
            out.append(
                Node(
                    parent_id=e.parent.id if e.parent else None,
                    stage=stage,
                    kind=e.operator,
                    idea=self.idea.name,
                    plan=f"{e.operator}{target}" + (f" with {e.second.id}" if e.second else ""),
                    seed=self.cfg.seed,
                    refs=[e.second.id] if e.second else [],
                    origin=Origin(policy=self.policy.name, island=e.island),
                )
            )
        return out

    def search_done(self, journal: Journal, stage: str, root: Node | None) -> str | None:
        """Why the stage's search ended early, or None. Such an end (its first good node, tuning
        judged converged, no new setting or ablation left) is learnt from a result, while
        look-ahead has other proposals under way: those whose experiment has not started (still
        thinking, or waiting for a slot) are discarded and their calls cancelled, not awaited.
        Nodes whose experiment runs or ran are awaited. A one-job attempt (pipeline off) cannot
        be told apart while it thinks: it is awaited too. When no new setting or ablation is left,
        the proposals made and waiting for a slot are awaited too: their claims are what the
        model was shown as tried (a stage whose look-ahead proposed all three ablations at once
        ran none of them when a fourth proposal then named only those)."""
        why = self._ended(stage)
        if why is not None:
            keep_proposed = self._spent(stage) is not None
            for n in self.nodes(stage):
                proposed = "think" in n.steps
                if (
                    not n.is_finished
                    and "run" not in n.steps
                    and (
                        (n.status == NodeStatus.PENDING and not (keep_proposed and proposed))
                        or (self.cfg.search.pipeline and not proposed)
                    )
                ):
                    journal.discard(n.id, f"the stage's search ended ({why}) before its experiment started")
        return why

    def _spent(self, stage: str) -> Node | None:
        """The stage's first node whose model named only settings or ablations it was shown as
        tried: it has run out of them."""
        return next((n for n in self.nodes(stage) if n.is_finished and operator_outcome(n).exhausted), None)

    def _ended(self, stage: str) -> str | None:
        nodes = self.nodes(stage)
        spent = self._spent(stage)
        if spent is not None:
            return f"no new {spent.kind} left: at {spent.id} the model named only ones already tried"
        rule = PLAN[stage].ends_early
        if rule == "first_good":
            good = min(
                (n for n in nodes if n.status == NodeStatus.GOOD),
                key=lambda n: n.finished_at or 0.0,
                default=None,
            )
            return f"first good node {good.id}" if good else None
        if rule == "converged":
            done = [n for n in nodes if n.is_finished and n.kind == PLAN[stage].grows]
            if len(done) < self.cfg.search.min_tuning_nodes:
                return None
            for n in done:
                j = operator_outcome(n).judgement
                if n.status == NodeStatus.GOOD and j is not None and j.converged:
                    return f"LLM judged tuning converged at {n.id}: {j.reason[:200]}"
        return None

    def job_for(self, node: Node, attempt: int) -> Job:
        """The node's next job: the whole cycle in one (re-runs of known code; the pipeline
        off), or its next step (docs/architecture.md, "The path of one node")."""
        a = self._attempt(node, attempt)
        if node.kind not in LLM_OPERATORS:  # replication / heldout / template: run known code
            return CycleJob(a, None, Ask(parent_code=node.code or "", plan=node.plan))
        if not self.cfg.search.pipeline:
            return CycleJob(a, self.llm, self._ask_for(node, a), self._review(node, blocking=False))
        step = next_step(node)
        if step == "think":
            return ThinkJob(a, self.llm, self._ask_for(node, a))
        proposed, ran = node.steps["think"], node.steps.get("run")
        assert isinstance(proposed, Proposed) and (ran is None or isinstance(ran, Ran))
        if step == "run":
            return RunJob(a, proposed)
        return JudgeJob(a, self.llm, proposed, ran, self._review(node, blocking=self._could_win(node)))

    def label(self, node: Node) -> str:
        out = operator_outcome(reported(node))
        if out.ablation:
            return f"ablation: {out.ablation}"
        if out.hyperparameters:
            return f"tuned: {variant(node)}"
        return node.origin.label or f"{node.kind} {node.id}"

    # -- helpers --------------------------------------------------------------------------------
    def _attempt(self, node: Node, attempt: int) -> Attempt:
        res = self.cfg.resources_for(node.kind)
        timeout = self.cfg.budgets.node_timeout_s
        data = {f"data/{p.name}": p for p in self.idea.datasets}
        if self.template is not None:
            data.update(self.template.files)
        if node.kind == "heldout":
            data.update({f"data/heldout/{p.name}": p for p in self.idea.heldout_data})
        return Attempt(
            node_id=node.id,
            attempt=attempt,
            run_dir=self.run_dir,
            idea=self.idea.name,
            stage=node.stage,
            operator=node.kind,
            metrics=self.idea.metrics,
            limits=Limits(wall_s=timeout, memory_mb=res.memory_mb),
            plot_limits=Limits(wall_s=min(timeout, PLOT_TIMEOUT_S), memory_mb=res.memory_mb),
            sandbox=self.cfg.sandbox.provider,
            sandbox_options=self.cfg.sandbox.options,
            python="python3" if self.cfg.sandbox.provider == "docker" else sys.executable,
            seed=node.seed,
            data=data,
            params=dict(self.template.params) if self.template else {},
            split="heldout" if node.kind == "heldout" else "search",
            vision=self.vision,
            plots_gate=self.cfg.search.plots_gate,
            max_plots=self.cfg.search.max_plots,
        )

    def _ask_for(self, node: Node, a: Attempt) -> Ask:
        """The think step's input: the parent's code, the settings or ablations claimed so far,
        and the prompt as first built (search/agentic/operators/frozen.py)."""
        parent = reported(self.journal.nodes[node.parent_id]) if node.parent_id else None
        claims = None
        if node.kind in ("hyperparameter", "ablation"):
            void = frozenset(
                n.id
                for n in self.journal.in_stage(node.stage, node.kind, idea=self.idea.name, discarded=True)
                if n.status == NodeStatus.DISCARDED
            )
            claims = ClaimBook(self.run_dir, self.idea.name, node.stage, node.kind, void)
        request = asked(self.run_dir, node.id, "think", lambda: self._ask(node, parent, claims, a))
        return Ask(
            prompt=request.prompt,
            parent_code=parent.code or "" if parent else "",
            parent_plot_code=operator_outcome(parent).plot_code if parent else "",
            claims=dataclasses.replace(claims, listed=frozenset(request.tried)) if claims else None,
        )

    def _review(self, node: Node, *, blocking: bool) -> Review:
        """The judge step's input, built when the node is judged: a tuning stage's judge sees the
        settings tried so far, as first built (kept like the prompt)."""
        tuning = self._asked_judge(node).tuning_history if _tunes(node) else ""
        return Review(tuning_history=tuning, blocking=blocking)

    def _ask(self, node: Node, parent: Node | None, claims: ClaimBook | None, job: Attempt) -> Asked:
        """The code proposal's prompt, from the journal as it is now (kept by `asked`)."""
        second = self.journal.nodes[node.refs[0]] if node.refs else None
        claimed = claims.tried() if claims else []
        # Its own claim (from an attempt cut short) is not "tried": the node may pick it again.
        tried = [key for owner, key in claimed if owner != node.id]
        prompt = code_prompt(
            CodeRequest(
                idea=self.idea,
                stage=node.stage,
                operator=node.kind,
                contract=contract(
                    self.idea.metrics,
                    job.limits.wall_s,
                    job.limits.memory_mb,
                    [p.name for p in self.idea.datasets],
                    job.params,
                    sorted(self.template.files) if self.template else (),
                ),
                parent=parent,
                second=second,
                history=[
                    n
                    for n in self.nodes(node.stage)
                    if n.is_finished and n.id not in (node.parent_id, *node.refs)
                ][-HISTORY:],
                tried=tried,
                parallel=self._parallel(node, {owner for owner, _ in claimed}) if claims else (1, 1),
            ),
            self.llm.budget("code"),
        )
        return Asked(prompt=prompt, tried=tried)

    def _parallel(self, node: Node, owners: set[str]) -> tuple[int, int]:
        """(this node's place, how many) among the stage's proposals of its kind being written now:
        unfinished and with no claim yet. Told their places, parallel proposals spread over the
        untried settings instead of racing for the same one and paying re-asks."""
        writing = [
            n.id
            for n in self.journal.in_stage(node.stage, node.kind, idea=self.idea.name)
            if not n.is_finished and n.id not in owners
        ]
        return (writing.index(node.id) + 1 if node.id in writing else 1), max(1, len(writing))

    def _could_win(self, node: Node) -> bool:
        """Whether the stage's decision waits for this node's judgement: its run reported a
        metric no finished good node of its stage beats (stages.StageManager._cannot_win is the
        other side). Such a judgement is sent as a blocking call, twice at once."""
        ran = node.steps.get("run")
        if not isinstance(ran, Ran) or ran.run_problem:
            return False
        score = self.spec.oriented(next((m.value for m in ran.metrics if m.name == self.spec.name), None))
        best = self.spec.best(n for n in self.nodes(node.stage) if n.is_finished)
        floor = self.spec.score(best) if best is not None else None
        return score is not None and (floor is None or score >= floor)

    def _asked_judge(self, node: Node) -> Asked:
        """The judge's view of the tuning so far (hyperparameter stage), kept like the prompt."""
        return asked(self.run_dir, node.id, "judge", lambda: Asked(tuning_history=self._tuning_history(node)))

    def _tuning_history(self, node: Node) -> str:
        rows = [
            f"- {n.id}: {operator_outcome(n).hyperparameters} -> {fmt_metrics(n.metrics)} ({n.status.value})"
            for n in self.nodes(node.stage)
            if n.is_finished and n.id != node.id
        ]
        return "\n".join(rows) or "none finished yet"


def _tunes(node: Node) -> bool:
    """Whether the node's stage is decided by a judged convergence: its judge sees the tuning so far."""
    return node.stage in PLAN.names and PLAN[node.stage].ends_early == "converged"


def reported(node: Node) -> Node:
    """`node` as its finished steps report it. A pipelined node whose run is in but whose
    judgement is still out (the leader speculation grows from, docs/engine.md) gets its
    proposal's code and plan and its run's metrics, as a child's prompt shows them; any other
    node is itself."""
    proposed, ran = node.steps.get("think"), node.steps.get("run")
    if node.is_finished or not isinstance(proposed, Proposed) or not isinstance(ran, Ran):
        return node
    outcome = OperatorOutcome(
        operator=node.kind,
        plot_code=proposed.plot_code,
        code_change=proposed.code_change,
        diff_error=proposed.diff_error,
        hyperparameters=proposed.hyperparameters,
        ablation=proposed.ablation,
        plots=[f"{ran.workspace}/{p}" for p in ran.plots],
        results_notes=ran.results_notes,
    )
    return node.model_copy(
        update={
            "code": proposed.code,
            "plan": proposed.plan or node.plan,
            "metrics": ran.metrics,
            "execution": ran.execution,
            "outcome": outcome,
        }
    )


def next_step(node: Node) -> Step:
    """A pipelined LLM operator's next step: think, then run, then judge (a resume continues here)."""
    if "think" not in node.steps:
        return "think"
    proposed = node.steps["think"]
    if "run" not in node.steps and not (isinstance(proposed, Proposed) and proposed.proposal_error):
        return "run"
    return "judge"


def has_vision(cfg: SearchSettings) -> bool:
    """Whether plots can be critiqued: a `vision` role mapped to a model that can see."""
    if cfg.llm is None or "vision" not in cfg.llm.roles:
        return False
    return resolve_model(cfg.llm, cfg.llm.roles["vision"].model).capabilities.vision
