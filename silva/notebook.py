"""A read-only view of a run for notebooks: `silva.open_run(run_dir)`.

Opening takes no lock and writes nothing, so it is safe beside a live run; call `refresh()`
to read the events appended since.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.journal import Journal
from engine.node import Node

if TYPE_CHECKING:
    import pandas as pd

    from silva.config import RunConfig
    from silva.report.scaling import Scaling


@dataclass
class RunView:
    run_dir: Path
    config: RunConfig
    journal: Journal

    @classmethod
    def open(cls, run_dir: Path | str) -> RunView:
        from silva.lifecycle import open_run

        path = Path(run_dir)
        cfg, journal = open_run(path, read_only=True)
        return cls(path, cfg, journal)

    def refresh(self) -> RunView:
        """A new view with every event written so far."""
        return RunView.open(self.run_dir)

    def node(self, node_id: str) -> Node:
        try:
            return self.journal.nodes[node_id]
        except KeyError:
            raise KeyError(
                f"{self.run_dir}: no node {node_id!r} (nodes run n0000..n{len(self.journal.nodes) - 1:04d})"
            ) from None

    def code(self, node_id: str) -> str:
        return self.node(node_id).code

    def nodes(self) -> pd.DataFrame:
        """One row per node: identity, status, timings, cost, one column per metric."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for n in self.journal:
            row = n.model_dump(
                mode="json",
                include={
                    "id",
                    "parent_id",
                    "idea",
                    "stage",
                    "kind",
                    "status",
                    "reason",
                    "seed",
                    "attempts",
                    "lost_attempts",
                    "cost_usd",
                    "created_at",
                    "started_at",
                    "finished_at",
                },
            )
            row.update({f"metric.{m.name}": m.value for m in n.metrics})
            rows.append(row)
        return pd.DataFrame(rows).set_index("id") if rows else pd.DataFrame()

    def best(self) -> pd.DataFrame:
        """The recorded best-node decision of every stage of every idea."""
        import pandas as pd

        rows = [
            {
                "idea": idea,
                "stage": stage,
                "node_id": e.node_id,
                "metric": e.metric,
                "value": e.value,
                "reason": e.reason,
            }
            for (idea, stage), e in self.journal.stage_best.items()
        ]
        return pd.DataFrame(rows)

    def scaling(self) -> Scaling:
        """Compute scaling (docs/budgets.md): `.curves` (best metric against GPU-hours and dollars),
        `.table` (per idea and forest), `.stops` (successive halving's stops) as DataFrames."""
        from silva.report.scaling import scaling

        return scaling(self.run_dir, self.journal)

    def best_node(self, stage: str, idea: str = "default") -> Node | None:
        decision = self.journal.stage_best.get((idea, stage))
        return self.journal.nodes[decision.node_id] if decision and decision.node_id else None
