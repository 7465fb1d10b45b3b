"""`silva review PAPER.pdf|PAPER_DIR|RUN_DIR [--reviews N]` and `silva review calibrate DATASET`.

The LLM comes from a config file with an `llm:` section mapping the `review` role to a model
(`--config`; a run directory's own config snapshot by default), plus an optional `review:`
section, `budgets.dollars` and `scripted_fn` (offline). Reviews run on a thread pool in this
process; the ledger and cache go to the run directory, or beside the paper.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console
from typer.core import TyperGroup

from engine.config import load_model, load_yaml
from engine.errors import ConfigError
from engine.journal import Journal
from engine.llm import LLM, LLMConfig, build_gateway, resolve_keys
from engine.llm.providers.base import Provider
from review.config import ReviewConfig, llm_for_review
from review.paper import Paper
from silva.llm_session import probe_llm, scripted_providers
from writeup.files import FAILURE_FILE

CONFIG_SNAPSHOT = "config.yaml"  # what `silva run` writes into a run directory


class _Budgets(BaseModel):
    dollars: float | None = Field(None, ge=0)


class ReviewSettings(BaseModel):
    """The sections of a config file `silva review` reads; any others (a whole run config) are ignored."""

    model_config = ConfigDict(extra="ignore")

    llm: LLMConfig
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    budgets: _Budgets = Field(default_factory=_Budgets)
    scripted_fn: str | None = None

    @field_validator("review", "budgets", mode="before")
    @classmethod
    def _unset_is_default(cls, value: object) -> object:
        # A run's config snapshot writes `review: null` when the run had no review phase.
        return {} if value is None else value


class _DefaultPaper(TyperGroup):
    """`silva review X` means `silva review paper X` unless X names a subcommand."""

    # typer 0.29 vendors click: the context it passes is typer._click's, not click's (pyproject pins typer).
    def parse_args(self, ctx: typer._click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["paper", *args]
        return super().parse_args(ctx, args)


review_app = typer.Typer(
    cls=_DefaultPaper,
    no_args_is_help=True,
    help="Review papers with an LLM ensemble and integrity checks (`silva review PATH` is "
    "`silva review paper PATH`); calibrate the reviewer on labelled papers.",
)


def load_settings(config: Path | None, papers: Sequence[Paper], reviews: int | None) -> ReviewSettings:
    if config is None:
        run_dir = _run_dir(papers)
        if run_dir is None:
            raise ConfigError(
                "no LLM configured for reviewing: pass --config FILE with an `llm:` section whose "
                "roles include `review` (a run directory uses its own config.yaml)"
            )
        config = run_dir / CONFIG_SNAPSHOT
        snapshot = load_yaml(config)
        if isinstance(snapshot, dict) and snapshot.get("llm") is None:
            raise ConfigError(
                f"{config}: this run used no LLM, so it names none to review with; pass --config FILE "
                "with an `llm:` section whose roles include `review` (README step 4)"
            )
    settings = load_model(config, ReviewSettings)
    if "review" not in settings.llm.roles:
        raise ConfigError(
            f"{config}: llm.roles.review is not set; map the `review` role to a model "
            f"(roles configured: {', '.join(sorted(settings.llm.roles)) or 'none'})"
        )
    probe_llm(settings.llm, ledger_dir(papers) if papers else None)  # printed and paid into the ledger
    if settings.scripted_fn is not None and ".py:" in settings.scripted_fn:
        file, _, fn = settings.scripted_fn.rpartition(":")
        settings.scripted_fn = f"{(config.parent / file).resolve()}:{fn}"
    if reviews is not None:
        settings.review = settings.review.model_copy(update={"reviews": reviews})
    return settings


def _providers(settings: ReviewSettings) -> dict[str, Provider]:
    return scripted_providers(settings.llm, settings.scripted_fn)


@contextmanager
def open_llm(settings: ReviewSettings, ledger_dir: Path) -> Iterator[LLM]:
    llm_cfg = llm_for_review(settings.llm, settings.review)
    gateway = build_gateway(
        llm_cfg,
        ledger_dir,
        settings.budgets.dollars,
        resolve_keys(llm_cfg, os.environ),
        providers=_providers(settings),
    )
    try:
        yield gateway.client()
    finally:
        gateway.close()


def _run_dir(papers: Sequence[Paper]) -> Path | None:
    """The one run directory the papers share, or None."""
    run_dirs = {p.run_dir for p in papers}
    return next(iter(run_dirs)) if len(run_dirs) == 1 else None


def ledger_dir(papers: Sequence[Paper]) -> Path:
    """Where the review's LLM ledger goes: the run directory of the papers, or beside the first."""
    return _run_dir(papers) or papers[0].out_dir


def _review(papers: Sequence[Paper], settings: ReviewSettings) -> list[Any]:
    from review.ensemble import review_papers

    run_dir = _run_dir(papers)
    journal = Journal.open(run_dir) if run_dir is not None else None  # refused while a run is live
    try:
        with open_llm(settings, ledger_dir(papers)) as llm:
            return review_papers(papers, llm, settings.review, journal=journal)
    finally:
        if journal is not None:
            journal.log.close()


@review_app.command("paper")
def paper(
    target: Path = typer.Argument(..., help="a PDF, a LaTeX directory, or a run directory (all its papers)"),
    reviews: int | None = typer.Option(
        None, "--reviews", min=1, max=20, help="reviews per paper (default 5)"
    ),
    config: Path | None = typer.Option(None, "--config", help="YAML with `llm:` (and optional `review:`)"),
) -> int:
    """Review papers: N reviews and an area-chair meta-review each, plus integrity checks.
    Writes review.json and review.md beside each paper."""
    from review.paper import resolve
    from silva.llm_session import show_progress

    show_progress()  # one line per LLM call on stderr: a slow model is seen working
    console = Console()
    papers = resolve(target)
    results = _review(papers, load_settings(config, papers, reviews))
    for p, r in zip(papers, results):
        overall = f"{r.overall:.2f}" if r.overall is not None else "n/a"
        console.print(
            f"[bold]{r.decision or 'no decision'}[/bold]  overall {overall}  "
            f"{r.reviews_used}/{len(r.reviews)} reviews  {r.integrity.findings} integrity finding(s)  "
            f"{p.out_dir / 'review.json'}",
            highlight=False,
        )
        if (p.out_dir / FAILURE_FILE).is_file():
            console.print(
                "  note: this is a failure report (the run found no result): the review judges how it "
                "reports the failures; a decision on it says nothing about the idea",
                highlight=False,
            )
        for line in r.integrity.lines(limit=10):
            console.print(f"  - {line}", highlight=False, markup=False)
        if r.meta_review is None or r.meta_review.form is None:
            why = r.meta_review.error if r.meta_review else (r.reviews[0].error if r.reviews else "")
            console.print(f"  no meta-review: {why}", highlight=False, markup=False)
    return 0 if all(r.decision is not None for r in results) else 1


@review_app.command("calibrate")
def calibrate(
    dataset: Path = typer.Argument(
        ..., help="CSV or JSONL: paper (path), decision (accept/reject), optional score"
    ),
    config: Path | None = typer.Option(
        None, "--config", help="YAML with `llm:` to review papers without a score"
    ),
    reviews: int | None = typer.Option(None, "--reviews", min=1, max=20, help="reviews per paper"),
    out: Path | None = typer.Option(None, "--out", help="output directory (default: DATASET-calibration/)"),
    fraction: float = typer.Option(
        0.5, "--calibration-fraction", min=0.1, max=0.9, help="share of papers used to choose the threshold"
    ),
    seed: int = typer.Option(0, "--seed"),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="bootstrap resamples"),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="also evaluate a fixed threshold (accept when overall >= T) on all papers: published protocol",
    ),
) -> int:
    """Measure the reviewer against real decisions: metrics with bootstrap intervals, baselines,
    a threshold chosen on a calibration split, a table, JSON and a reliability plot."""
    from review import calibrate as cal
    from review.paper import resolve

    console = Console()
    items = cal.load_dataset(dataset)

    def score(paths: list[Path]) -> dict[Path, float | None]:
        if config is None:
            raise ConfigError(
                f"{dataset}: {len(paths)} paper(s) have no score; pass --config with an `llm:` "
                "section to review them, or add a `score` column"
            )
        papers = []
        for path in paths:
            found = resolve(path)
            if len(found) != 1:
                raise ConfigError(
                    f"{dataset}: {path} holds {len(found)} papers; list each paper on its own row"
                )
            papers += found
        results = _review(papers, load_settings(config, papers, reviews))
        return {path: r.overall for path, r in zip(paths, results)}

    items = cal.fill_scores(items, score)
    report, arrays = cal.calibrate(
        items,
        dataset=str(dataset),
        calibration_fraction=fraction,
        seed=seed,
        n_resamples=resamples,
        fixed_threshold=threshold,
    )
    paths = cal.write_outputs(report, arrays, out or dataset.parent / f"{dataset.stem}-calibration")
    console.print(cal.render_table(report), highlight=False, markup=False)
    for kind, path in paths.items():
        console.print(f"{kind}: {path}", highlight=False)
    return 0


def register(app: typer.Typer) -> None:
    app.add_typer(review_app, name="review")
