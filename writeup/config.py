"""The `writeup:` section of a run config: turns the paper writer into a phase after the search.

```yaml
writeup:
  template: workshop            # workshop (4 pages) | conference (8 pages)
  offline: null                 # null: the LLM writer when the run has a `writeup` role, else templates
  literature: {provider: semantic_scholar, api_key_env: S2_API_KEY}
  sections: [Introduction, Method, Experiments, Results, Related Work, Limitations, Conclusion]
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

TemplateName = Literal["workshop", "conference"]
PAGE_LIMITS: dict[str, int] = {"workshop": 4, "conference": 8}
SECTIONS = ["Introduction", "Method", "Experiments", "Results", "Related Work", "Limitations", "Conclusion"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiteratureConfig(_Strict):
    provider: Literal["semantic_scholar", "openalex", "offline_bib", "none"] = "semantic_scholar"
    base_url: str | None = Field(None, description="API root; default: the provider's public endpoint")
    api_key_env: str | None = Field(None, description="NAME of the variable holding a Semantic Scholar key")
    mailto: str | None = Field(None, description="OpenAlex polite-pool e-mail")
    bib_file: Path | None = Field(None, description="the user's .bib (offline_bib)")
    requests_per_s: float = Field(1.0, gt=0, description="client-side rate limit")
    max_retries: int = Field(5, ge=0, description="429/5xx/connection errors, with exponential backoff")
    timeout_s: float = Field(20.0, gt=0)


class CompileConfig(_Strict):
    wall_s: float = Field(120.0, gt=0, description="deadline of one latexmk run")
    memory_mb: int = Field(2048, ge=256, description="address-space limit of the TeX process tree")


class WriteupConfig(_Strict):
    template: TemplateName = "workshop"
    offline: bool | None = Field(
        None, description="true: template report, no LLM; null: LLM writer when a `writeup` role exists"
    )
    literature: LiteratureConfig = Field(default_factory=LiteratureConfig)
    compile: CompileConfig = Field(default_factory=CompileConfig)
    max_fix_rounds: int = Field(5, ge=0, description="LLM rounds to fix LaTeX compile errors")
    reflection_rounds: int = Field(2, ge=0, description="rounds fed by chktex, log, pages, numbers, vision")
    citation_rounds: int = Field(3, ge=0, description="literature search rounds (queries, then picks)")
    papers_per_query: int = Field(8, ge=1, le=100)
    max_citations: int = Field(20, ge=0)
    test: Literal["welch", "student", "mannwhitney"] = Field("welch", description="method against baseline")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of every claim's verdict")
    sections: list[str] = Field(
        default_factory=lambda: list(SECTIONS),
        min_length=1,
        description="the LLM writer's sections after the abstract, in order, one call each; "
        "Results (the figures' place) is required",
    )

    @field_validator("sections")
    @classmethod
    def _results_once(cls, value: list[str]) -> list[str]:
        names = [v.strip() for v in value]
        if "Results" not in names:
            raise ValueError("sections must include Results: the figures and the numbers go there")
        if "" in names or "Abstract" in names or len(set(names)) < len(names):
            raise ValueError(f"sections must be distinct and named, the abstract aside: {value}")
        return names

    @property
    def page_limit(self) -> int:
        return PAGE_LIMITS[self.template]
