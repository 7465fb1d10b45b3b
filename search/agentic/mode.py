"""The LLM tree search as a registered mode (search/modes.py): a forest of idea trees, each
grown over the four stages of search/agentic/plan.py, from drafts or from a template's code."""

from __future__ import annotations

from engine.dispatch import Strategy
from engine.node import MetricSpec

# The outcome families of a node's steps (Proposed, Ran, OperatorOutcome) register on import: the
# journal of a resumed run is replayed after the config loads this module, so it reads them typed.
from search.agentic.operators import job as _step_outcomes  # noqa: F401
from search.agentic.plan import PLAN
from search.idea import Idea, load_ideas, run_metrics
from search.modes import BuildContext, Mode, ModeConfig


def _selected(cfg: ModeConfig) -> bool:
    return cfg.idea is not None or bool(cfg.ideas) or cfg.ideation is not None


def _check(cfg: ModeConfig) -> None:
    if cfg.idea is not None and cfg.ideas:
        raise ValueError("set exactly one of `idea` (one idea) or `ideas` (a forest), not both")
    if cfg.llm is None and cfg.template is not None:
        raise ValueError(
            "`template` with `idea`/`ideas` (the LLM search from the template's code) needs an `llm:` "
            "section: providers, models and roles"
        )


def _ideas(cfg: ModeConfig) -> list[Idea]:
    """The run's configured ideas; with a template, each takes the template's code, metrics and
    settings. A rolling forest's ideas come later: its metrics are the `ideation:` section's."""
    ideas = load_ideas(cfg.idea_sources())
    if cfg.template is None:
        return ideas
    from search.template.seed import TemplateSeed
    from search.template.spec import Template

    seed = TemplateSeed.from_template(Template.load(cfg.template))
    return [seed.adapt(i) for i in ideas]


def _metrics(cfg: ModeConfig) -> list[MetricSpec]:
    if cfg.ideation is not None and not (cfg.idea or cfg.ideas):
        metrics: list[MetricSpec] = cfg.ideation.metrics
        return metrics
    return run_metrics(_ideas(cfg))


def _build(ctx: BuildContext) -> Strategy:
    from search.rolling import build_forest
    from search.template.spec import Template

    cfg = ctx.cfg
    assert ctx.llm is not None  # needs_llm
    return build_forest(
        cfg,
        ctx.journal,
        ctx.llm,
        ctx.spent_by,
        cfg.allocation,
        ctx.meter,
        more_phases=ctx.phases,
        template=Template.load(cfg.template) if cfg.template is not None else None,
        supply=ctx.ideas,
    )


MODE = Mode(
    name="agentic",
    plan=PLAN,
    source="`idea`, `ideas` or `ideation` (LLM search; with `template`, grown from the template's code)",
    selected=_selected,
    build=_build,
    metrics=_metrics,
    check=_check,
)
