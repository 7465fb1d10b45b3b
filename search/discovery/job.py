"""One discovery attempt on a worker: (LLM proposal,) the analysis in the sandbox, the evidence.

Node kinds:
- `hypothesis` (DiscoPER Propose), `seed` (ExperiGen acquisition: scored candidates, the best on
  plausibility + novelty is run), `refine` (ExperiGen refinement step): one LLM call, then the
  code runs in the sandbox on the train part.
  A hypothesis identical to one tested before (`known`) is not run again (`duplicate_of`).
- `heldout`: no LLM; the hypothesis's recorded code runs once on the held-out part.
- `interaction`: no LLM; Silva's follow-up of two standing main effects on one outcome
  (search/discovery/interactions.py), run on the train part like a proposal.
- `adjustment`, `control`: no LLM; Silva's own checks of a decided claim (search/discovery/checks.py)
  run in one sandbox execution on held-out tables (permuted for a control).
- `reflect`: one LLM call (DiscoPER Reflect), no sandbox.
The attempt returns a `DiscoveryOutcome` (a typed outcome, journaled with the result); the
workspace keeps `hypothesis.py`, `silva_test.json` and any figures.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import ValidationError

from engine.attempt import failure_reason, fresh_workspace, summarize
from engine.contract import read_capped
from engine.llm import LLM, BudgetExceeded, LLMError, Message
from engine.node import AttemptResult, BudgetRefusal, ExecSummary, MetricValue
from engine.outcome import NodeOutcome
from sandbox.base import Limits, get_provider, kept_artifacts, workspace_file
from search.agentic.operators.evaluate import png_bytes
from search.discovery.bank import Embedder, claim_text, fallback_reason, make_embedder, novelty
from search.discovery.checks import CHECK_KINDS, RUNNER, CheckResult, CheckSpec, permuted
from search.discovery.evidence import MAX_RESULT_BYTES, Hypothesis, TestOutcome, hypothesis_key
from search.discovery.prompts import SYSTEM, Reflection, ScoredHypothesis, SeedCandidates, vision_prompt

STATS_MODULE = "silva_stats.py"
STATS_SOURCE = (Path(__file__).parent / STATS_MODULE).read_bytes()
CODE_FILE, RESULT_FILE = "hypothesis.py", "silva_test.json"
DATA_IN_WORKSPACE = "data/data.parquet"
PROPOSING_KINDS = ("hypothesis", "seed", "refine", "interaction")
BANK_KINDS = ("seed", "refine")  # ExperiGen's: their claims may enter the bank


class DiscoveryOutcome(NodeOutcome):
    """What one attempt produced; `evidence` is None when the analysis gave no valid result."""

    family: Literal["discovery"] = "discovery"
    kind: str
    hypothesis: Hypothesis | None = None
    evidence: TestOutcome | None = None
    error: str = ""
    figure_reading: str = ""
    reflection: Reflection | None = None
    candidates: list[dict[str, Any]] = []  # seed: every candidate with plausibility, novelty, score
    llm_calls: int = 0
    embedding_fallback: str = ""  # why TF-IDF stood in for the gateway's embeddings, if it did
    duplicate_of: str = ""  # an earlier hypothesis with the same `hypothesis_key`: not run again
    checks: list[CheckResult] = []  # adjustment / control: one result per check, in order


@dataclass
class DiscoveryJob:
    node_id: str
    attempt: int
    run_dir: Path
    kind: str
    stage: str
    idea: str
    limits: Limits
    sandbox: str
    python: str
    data_file: Path  # the split this attempt may read (train, or held-out for `heldout` only)
    images_dir: Path | None = None
    llm: LLM | None = None
    prompt: str = ""
    hypothesis: Hypothesis | None = None  # heldout, interaction: the hypothesis and code, no LLM call
    vision: bool = False
    bank_texts: list[str] = field(default_factory=list)
    novelty_weight: float = 1.0
    embed_with_gateway: bool = False  # an `embedding` role is configured: LLM.embed, not TF-IDF
    sandbox_options: dict[str, Any] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)  # hypothesis_key -> id, hypotheses tested before
    checks: list[CheckSpec] = field(default_factory=list)  # adjustment / control
    group_column: str | None = None  # a control permutes whole groups
    identifiers: list[str] = field(default_factory=list)  # columns that name units: never a tested variable

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        ws = fresh_workspace(self.run_dir, self.node_id, self.attempt)
        out = DiscoveryOutcome(kind=self.kind)
        execution = ExecSummary()
        try:
            if self.kind == "reflect":
                out.reflection = self._ask(Reflection, "feedback", out)
            elif self.kind in CHECK_KINDS:
                execution = self._run_checks(ws, gpu_ids, out)
            else:
                out.hypothesis = self.hypothesis if self.hypothesis is not None else self._propose(out)
                if out.hypothesis is not None and self.kind != "heldout":
                    out.duplicate_of = self.known.get(hypothesis_key(out.hypothesis), "")
                if out.hypothesis is not None and not out.duplicate_of:
                    out.error = self._identifier_tested(out.hypothesis)
                    if not out.error:
                        execution = self._analyse(ws, gpu_ids, out)
        except BudgetExceeded as e:
            # No result: the run stops cleanly and the node re-runs on resume.
            return AttemptResult(status="buggy", refusal=BudgetRefusal(budget="dollars", message=str(e)))
        except LLMError as e:
            out.error = f"LLM call failed: {str(e)[:1000]}"
        rel = ws.relative_to(self.run_dir)
        keep = [CODE_FILE, RESULT_FILE, *(out.evidence.figures if out.evidence else [])]
        ok = (
            out.reflection is not None
            or out.evidence is not None
            or bool(out.duplicate_of)
            or any(c.evidence for c in out.checks)
        )
        metrics = (
            []
            if out.evidence is None
            else [
                MetricValue(name="log_p", value=out.evidence.log_p, direction="minimize"),
                MetricValue(name="abs_effect", value=abs(out.evidence.effect), direction="maximize"),
                MetricValue(name="n", value=float(out.evidence.n), direction="maximize"),
            ]
        )
        return AttemptResult(
            status="good" if ok else "buggy",
            reason=out.error,
            metrics=metrics,
            execution=execution,
            artifacts=kept_artifacts(ws, rel, keep),
            workspace=str(rel),
            started_at=started,
            finished_at=time.time(),
            outcome=out,
            code=out.hypothesis.code if out.hypothesis else None,
            plan=out.hypothesis.statement if out.hypothesis else None,
        )

    # -- steps ----------------------------------------------------------------------------------
    def _ask(self, output_type: Any, role: str, out: DiscoveryOutcome, *, prompt: str | None = None) -> Any:
        assert self.llm is not None
        out.llm_calls += 1
        return self.llm.complete(
            [Message.system(SYSTEM), Message.user(prompt or self.prompt)],
            role=role,
            output_type=output_type,
            node_id=self.node_id,
            stage=self.stage,
            idea=self.idea,
            attempt=self.attempt,
        )

    def _propose(self, out: DiscoveryOutcome) -> Hypothesis | None:
        embedder = make_embedder(
            self.llm, self.embed_with_gateway, node_id=self.node_id, stage=self.stage, idea=self.idea
        )
        hypothesis = self._seed(out, embedder) if self.kind == "seed" else self._ask(Hypothesis, "code", out)
        if self.kind in BANK_KINDS and self.embed_with_gateway:
            # An ExperiGen claim may enter the bank: its vector, cached now, spares the driver a
            # network call when it prunes the bank (a seed's is usually cached already: a free hit).
            embedder.embed([claim_text(hypothesis)])
        out.embedding_fallback = fallback_reason(embedder)
        return hypothesis

    def _seed(self, out: DiscoveryOutcome, embedder: Embedder) -> Hypothesis:
        seeds: SeedCandidates = self._ask(SeedCandidates, "code", out)
        texts = [claim_text(c) for c in seeds.candidates]
        novel = novelty(texts, self.bank_texts, embedder)
        scored = [
            (c.plausibility + self.novelty_weight * nv, i)
            for i, (c, nv) in enumerate(zip(seeds.candidates, novel))
        ]
        best = max(scored)[1]
        out.candidates = [
            {
                "statement": c.statement,
                "plausibility": c.plausibility,
                "novelty": nv,
                "score": s,
                "chosen": i == best,
            }
            for (s, i), c, nv in zip(scored, seeds.candidates, novel)
        ]
        chosen: ScoredHypothesis = seeds.candidates[best]
        return Hypothesis.model_validate(chosen.model_dump(exclude={"plausibility"}))

    def _identifier_tested(self, h: Hypothesis) -> str:
        """Why a hypothesis is not analysed: it relates an identifier column (its first two
        variables are the ones its test relates; an identifier may still group rows)."""
        named = [v for v in h.variables[:2] if v in self.identifiers]
        if not named:
            return ""
        return (
            f"not analysed: {named[0]!r} identifies units (subjects, records), it is not a variable; "
            "an identifier may only group rows"
        )

    def _analyse(self, ws: Path, gpu_ids: Sequence[int], out: DiscoveryOutcome) -> ExecSummary:
        assert out.hypothesis is not None
        files = {
            CODE_FILE: out.hypothesis.code.encode(),
            STATS_MODULE: STATS_SOURCE,
            DATA_IN_WORKSPACE: self.data_file.read_bytes(),
        }
        files.update(self._image_files())
        box = get_provider(self.sandbox, **self.sandbox_options).open(ws, gpu_ids=gpu_ids)
        images: list[bytes] = []
        try:
            res = box.exec([self.python, CODE_FILE], limits=self.limits, files=files)
            problem = failure_reason(res, self.limits)
            raw, unreadable = read_capped(
                box, RESULT_FILE, res.files if not problem else [], MAX_RESULT_BYTES
            )
            if problem or unreadable:
                out.error = problem or unreadable
            elif raw is None:
                out.error = f"the analysis wrote no {RESULT_FILE} (it must call st.record)"
            else:
                out.evidence = _validate(raw, out)
            if out.evidence is not None and self.vision and self.llm is not None:
                images, too_big = png_bytes(
                    box, [f for f in out.evidence.figures if f.endswith(".png") and _kept(ws, f)]
                )
                out.error = out.error or too_big
        finally:
            box.close()
        if images and self.llm is not None:
            out.llm_calls += 1
            out.figure_reading = self.llm.complete(
                Message.user(vision_prompt(out.hypothesis), images=images),
                role="vision",
                node_id=self.node_id,
                stage=self.stage,
                idea=self.idea,
                attempt=self.attempt,
            ).text[:4000]
        return summarize(res)

    def _image_files(self) -> dict[str, bytes]:
        if self.images_dir is None:
            return {}
        return {
            f"data/images/{p.relative_to(self.images_dir)}": p.read_bytes()
            for p in sorted(self.images_dir.rglob("*"))
            if p.is_file()
        }

    def _run_checks(self, ws: Path, gpu_ids: Sequence[int], out: DiscoveryOutcome) -> ExecSummary:
        """Every check in one sandbox execution (`RUNNER`), each on its own copy of the table."""
        table = pd.read_parquet(self.data_file)
        files = {"run_checks.py": RUNNER.encode(), STATS_MODULE: STATS_SOURCE, **self._image_files()}
        for k, spec in enumerate(self.checks):
            data = permuted(table, spec.permute, spec.seed, self.group_column) if spec.permute else table
            buf = io.BytesIO()
            data.to_parquet(buf, index=False)
            files[f"checks/{k}.parquet"] = buf.getvalue()
            files[f"checks/{k}.py"] = spec.code.encode()
        box = get_provider(self.sandbox, **self.sandbox_options).open(ws, gpu_ids=gpu_ids)
        try:
            res = box.exec(
                [self.python, "run_checks.py", str(len(self.checks))], limits=self.limits, files=files
            )
            out.error = failure_reason(res, self.limits)
            for k, spec in enumerate(self.checks):
                result = CheckResult(label=spec.label)
                raw, unreadable = read_capped(box, f"checks/{k}.json", res.files, MAX_RESULT_BYTES)
                if raw is None:
                    result.error = unreadable or "no result"
                else:
                    result.evidence = _validate(raw, out)
                out.checks.append(result)
        finally:
            box.close()
        return summarize(res)


def _validate(raw: bytes, out: DiscoveryOutcome) -> TestOutcome | None:
    try:
        return TestOutcome.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as e:
        out.error = f"{RESULT_FILE} is invalid: {str(e)[:500]}"
        return None


def _kept(ws: Path, path: str) -> bool:
    return workspace_file(ws, path) is not None
