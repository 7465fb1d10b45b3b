"""The offline template search as a registered mode (search/modes.py): no LLM; a template's
declared space searched by Sobol or a model, one tree or a forest of variants."""

from __future__ import annotations

from engine.dispatch import Strategy
from engine.node import MetricSpec
from search.modes import BuildContext, Mode, ModeConfig
from search.template.plan import PLAN
from search.template.spec import Template


def _selected(cfg: ModeConfig) -> bool:
    # `template` with `idea`/`ideas` is the LLM search grown from the template's code (agentic).
    return cfg.template is not None and cfg.idea is None and not cfg.ideas


def _template(cfg: ModeConfig) -> Template:
    assert cfg.template is not None  # _selected
    return Template.load(cfg.template)


def _metrics(cfg: ModeConfig) -> list[MetricSpec]:
    return list(_template(cfg).spec.metrics)


def _build(ctx: BuildContext) -> Strategy:
    from search.phases import PhasedTree
    from search.stages import StageManager
    from search.template.search import TemplateSearch

    cfg, template = ctx.cfg, _template(ctx.cfg)
    if cfg.variants:  # a template forest (docs/budgets.md)
        from search.template.forest import build_template_forest

        return build_template_forest(cfg, ctx.journal, template, cfg.variants, cfg.allocation, ctx.meter)
    tree = StageManager(cfg, ctx.journal, TemplateSearch(cfg, template, ctx.journal), PLAN)
    phases = ctx.phases("default")
    return PhasedTree(tree, phases) if phases else tree


MODE = Mode(
    name="template",
    plan=PLAN,
    source="`template` (offline search)",
    selected=_selected,
    build=_build,
    metrics=_metrics,
    needs_llm=False,
)
