"""The topic file of `silva ideate`: what to think about, with what models, against which
literature, and how hard (ideas, reflection rounds, novelty rounds, similarity threshold)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from engine.config import Strict, load_model
from engine.errors import ConfigError
from engine.llm.config import LLMConfig
from engine.node import MetricSpec
from writeup.config import LiteratureConfig

ROLE = "ideation"  # the LLM role ideation asks; `code` stands in when the config has no such role


class TopicConfig(Strict):
    topic: str = Field("", description="the research area and question, in a few paragraphs")
    template: Path | None = Field(None, description="a template directory whose experiment ideas extend")
    metrics: list[MetricSpec] = Field(
        default_factory=list, description="metrics every idea declares (else the LLM's)"
    )
    datasets: list[Path] = Field(default_factory=list, description="data files every idea's experiments get")
    num_ideas: int = Field(5, ge=1, description="ideas to add to the archive in this call")
    reflections: int = Field(2, ge=0, description="rounds in which the LLM criticises and improves each idea")
    novelty_rounds: int = Field(
        3, ge=1, description="literature queries per idea before the novelty decision"
    )
    papers_per_query: int = Field(8, ge=1, le=100)
    max_similarity: float = Field(
        0.8,
        gt=0,
        le=1,
        description="an idea this similar (cosine) to an archived one is a duplicate; TF-IDF and embedding "
        "models put cosines on different scales, so set it for the one in use",
    )
    seed: int = 0
    llm: LLMConfig
    literature: LiteratureConfig = Field(default_factory=LiteratureConfig)
    scripted_fn: str | None = Field(
        None, description="`file.py:function` answering scripted providers (offline)"
    )

    @property
    def role(self) -> str:
        return ROLE if ROLE in self.llm.roles else "code"


def load_topic(path: Path, template: Path | None = None) -> TopicConfig:
    """Load and validate a topic file; paths are relative to it. `template` overrides the file's."""
    cfg = load_model(path, TopicConfig, "topic settings (topic, llm, literature, ...)")
    base = path.parent
    updates: dict[str, object] = {
        "datasets": [p if p.is_absolute() else (base / p).resolve() for p in cfg.datasets]
    }
    chosen = template if template is not None else (base / cfg.template if cfg.template is not None else None)
    if chosen is not None:
        chosen = chosen.resolve()
        if not (chosen / "template.yaml").is_file():
            raise ConfigError(
                f"template {str(chosen)!r}: no template.yaml there; point --template at a template directory"
            )
        updates["template"] = chosen
    if cfg.scripted_fn is not None and ".py:" in cfg.scripted_fn:
        file, _, fn = cfg.scripted_fn.rpartition(":")
        updates["scripted_fn"] = f"{(base / file).resolve()}:{fn}"
    cfg = cfg.model_copy(update=updates)
    if not cfg.topic.strip() and cfg.template is None:
        raise ConfigError(
            f"{path}: topic is empty; write the research area in `topic:` or give a template (--template DIR)"
        )
    if cfg.role not in cfg.llm.roles:
        raise ConfigError(f"{path}: llm.roles has neither `{ROLE}` nor `code`; add `{ROLE}: {{model: ...}}`")
    for i, p in enumerate(cfg.datasets):
        if not p.is_file():
            raise ConfigError(f"{path}: datasets.{i} = {str(p)!r}: file not found")
    return cfg
