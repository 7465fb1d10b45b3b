"""Held-out selection: after the four stages, re-run the top candidates on a split the search
never saw and record the final choice beside the search metric.

The held-out data (the idea's `heldout_data`) is copied only into these attempts, and
silva_params.json says `split: heldout`; search nodes never get either. Candidates are the
last candidate stage's best node plus the best good nodes of the plan's candidate stages
(`final_candidate`) by the search metric.
"""

from __future__ import annotations

from typing import Any

from engine.events import HeldoutSelected
from engine.executor import Job
from engine.journal import Journal
from engine.node import Node, NodeStatus
from search.agentic.plan import PLAN
from search.config import SearchSettings
from search.idea import Idea
from search.stages import StageSearch
from search.tree import SUPPORT_KINDS

HELDOUT = "heldout"
CANDIDATE_STAGES = tuple(s.name for s in PLAN.stages if s.final_candidate)


class HeldoutPhase:
    """A `Phase`: its nodes re-run candidates' code on the held-out split (through `search`)."""

    stage = HELDOUT
    after_no_result = False  # no candidate to re-run

    def __init__(self, cfg: SearchSettings, journal: Journal, idea: Idea, search: StageSearch) -> None:
        self.cfg, self.journal, self.idea, self.search = cfg, journal, idea, search

    def job_for(self, node: Node, attempt: int) -> Job:
        return self.search.job_for(node, attempt)

    def summary(self) -> str:
        h = self.journal.heldout[self.idea.name]
        return f"held-out choice {h.node_id} ({h.reason})"

    def candidates(self) -> list[Node]:
        j, name = self.journal, self.idea.name
        pool = self.idea.primary.ranked(
            n for s in CANDIDATE_STAGES for n in j.in_stage(s, idea=name) if n.kind not in SUPPORT_KINDS
        )
        ended = j.stage_ended.get((name, CANDIDATE_STAGES[-1]))
        final = ended.best_node_id if ended else None
        ordered = ([j.nodes[final]] if final else []) + [n for n in pool if n.id != final]
        return ordered[: self.cfg.search.heldout_candidates]

    def done(self) -> bool:
        return self.idea.name in self.journal.heldout

    def propose(self, slots: int) -> list[Node]:
        """Held-out runs still to start; once all are in, the recorded selection (and no nodes)."""
        runs = {n.parent_id: n for n in self.journal.in_stage(HELDOUT, HELDOUT, idea=self.idea.name)}
        candidates = self.candidates()
        missing = [c for c in candidates if c.id not in runs]
        if missing:
            return [
                Node(
                    parent_id=c.id,
                    stage=HELDOUT,
                    kind=HELDOUT,
                    idea=self.idea.name,
                    code=c.code,
                    plan=f"held-out evaluation of {c.id}",
                    seed=self.cfg.seed,
                )
                for c in missing[:slots]
            ]
        if all(runs[c.id].is_finished for c in candidates) and not self.done():
            self._select(candidates, runs)
        return []

    def _select(self, candidates: list[Node], runs: dict[str | None, Node]) -> None:
        metric = self.idea.primary.name
        rows: list[dict[str, Any]] = [
            {
                "node_id": c.id,
                "heldout_node_id": runs[c.id].id,
                "search_value": c.metric(metric),
                "heldout_value": runs[c.id].metric(metric) if runs[c.id].status == NodeStatus.GOOD else None,
                "heldout_status": runs[c.id].status.value,
            }
            for c in candidates
        ]
        valid = [r for r in rows if r["heldout_value"] is not None]
        search_best = rows[0] if rows else None
        if not valid:
            chosen, reason = None, "no candidate produced the primary metric on the held-out split"
        else:
            chosen = max(valid, key=lambda r: self.idea.primary.oriented(r["heldout_value"]))  # type: ignore[arg-type, return-value]
            same = search_best is not None and chosen["node_id"] == search_best["node_id"]
            reason = f"best {metric} on the held-out split among {len(rows)} candidate(s)" + (
                "; agrees with the search's choice"
                if same
                else f"; the search chose {search_best['node_id'] if search_best else '-'}"
            )
        self.journal.record(
            HeldoutSelected(
                idea=self.idea.name,
                metric=metric,
                node_id=chosen["node_id"] if chosen else None,
                heldout_node_id=chosen["heldout_node_id"] if chosen else None,
                heldout_value=chosen["heldout_value"] if chosen else None,
                search_value=chosen["search_value"] if chosen else None,
                search_best_id=search_best["node_id"] if search_best else None,
                search_best_heldout_value=search_best["heldout_value"] if search_best else None,
                candidates=rows,
                reason=reason,
            )
        )
