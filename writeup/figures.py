"""The aggregation step: one script, run in the sandbox, combines the stages' results into a few
compound figures. The script is Silva's template (offline) or one an LLM wrote; it sees only
figure_data.json, and a script that fails or draws nothing falls back to the template."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from sandbox.base import Limits, SandboxProvider
from writeup.results import ResultsMacros
from writeup.run_reader import IdeaResults

TEMPLATE_SCRIPT = Path(__file__).parent / "templates" / "figures.py"


@dataclass(frozen=True)
class Figure:
    name: str  # file name under figures/, also the \label suffix
    path: Path

    @property
    def label(self) -> str:
        return "fig:" + Path(self.name).stem


def figure_data(idea: IdeaResults, macros: ResultsMacros) -> dict[str, object]:
    """What the figure script reads; groups are named as the paper's text names them (its ledger)."""
    headline = macros.main
    return {
        "title": idea.title,
        "primary": idea.primary.name,
        "metrics": [m.name for m in idea.metrics],
        "directions": {m.name: m.direction for m in idea.metrics},
        "main_stage": headline.stage if headline else None,
        "names": {label: macros.name(label) for s in idea.stages for label in s.groups},
        "stages": [
            {
                "stage": s.stage,
                "groups": {g: {m: st.model_dump() for m, st in per.items()} for g, per in s.groups.items()},
            }
            for s in idea.stages
        ],
    }


def make_figures(
    idea: IdeaResults,
    macros: ResultsMacros,
    paper_dir: Path,
    provider: SandboxProvider,
    script: str | None = None,
    wall_s: float = 120.0,
) -> tuple[list[Figure], str]:
    """Figures in paper_dir/figures/ and what happened ('template', 'llm', or why the LLM's failed)."""
    attempts = [("llm", script)] if script else []
    attempts.append(("template", TEMPLATE_SCRIPT.read_text()))
    out_dir = paper_dir / "figures"
    note = ""
    for origin, code in attempts:
        ws = paper_dir / "figures-build"
        shutil.rmtree(ws, ignore_errors=True)
        box = provider.open(ws)
        try:
            res = box.exec(
                ["python3", "make_figures.py"],
                limits=Limits(wall_s=wall_s, memory_mb=2048),
                files={
                    "make_figures.py": code.encode(),
                    "figure_data.json": json.dumps(figure_data(idea, macros)).encode(),
                },
            )
        finally:
            box.close()
        pngs = sorted((ws / "figures").glob("*.png")) if (ws / "figures").is_dir() else []
        if res.ok and pngs:
            shutil.rmtree(out_dir, ignore_errors=True)
            out_dir.mkdir(parents=True)
            figures = []
            for png in pngs[:4]:  # a few compound figures, never a gallery
                shutil.copyfile(png, out_dir / png.name)
                figures.append(Figure(png.name, out_dir / png.name))
            shutil.rmtree(ws, ignore_errors=True)
            return figures, origin if not note else f"{origin} ({note})"
        note = (
            f"the {origin} script failed: exit {res.exit_code}, {(res.stderr or res.stdout)[-300:].strip()}"
        )
    raise RuntimeError(f"no figure could be drawn: {note}")
