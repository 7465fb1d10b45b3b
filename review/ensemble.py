"""The reviewer ensemble and the area chair, as jobs on the engine's executor.

Every review of every paper is submitted at once (so a forest's papers are reviewed together,
bounded only by the executor and the gateway's limits); each paper's meta-review is submitted as
soon as its last review is in. A job writes its outcome to a file under
`<paper dir>/reviews/` and reports an `AttemptResult`; an LLM failure (an answer that never
validated, a failed call, the dollar budget) is a failed review, recorded, never a crash of the
others. When a journal is given (a run), each review's start and end are journal events.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import Resources
from engine.events import Event, ReviewFinished, ReviewStarted
from engine.executor import Executor, Handle, InProcessExecutor
from engine.journal import Journal
from engine.llm import LLM, LLMError, Message
from engine.llm.gateway import progress
from engine.llm.prompt_budget import IMAGE_TOKENS, PromptBudget, PromptTooLarge
from engine.node import AttemptResult, StepResult
from review import guidelines
from review.config import ReviewConfig
from review.form import STORED, MetaReviewForm, PartNotes, ReviewForm
from review.integrity import IntegrityReport, run_checks
from review.paper import Paper, paragraph_chunks
from review.result import MetaReview, ReviewRecord, ReviewResult, aggregate

# Reviews wait on the network: they hold no CPU or GPU that an experiment could use.
REVIEW_RESOURCES = Resources(num_cpus=0, memory_mb=256)
REVIEWS_DIR = "reviews"
MAX_LOST = 2  # re-submissions of a review whose worker died, before it is recorded as failed
WAIT_S = 1.0
MIN_PART_CHARS = 1500  # a part shorter than this is not worth a call of its own
PART_SLACK = 200  # tokens: the chat template and the form's schema, which llama.cpp adds as a grammar


def _finished(ok: bool, reason: str, out: Path, started: float) -> AttemptResult:
    return AttemptResult(
        status="good" if ok else "buggy",
        reason=reason,
        artifacts=[str(out)],
        started_at=started,
        finished_at=time.time(),
    )


@dataclass
class ReviewJob:
    """One reviewer: a review, then its reflection rounds. Writes a ReviewRecord to `out`."""

    node_id: str
    attempt: int
    llm: LLM
    index: int
    persona: str
    title: str
    parts: list[str]  # the paper's text: one part, or several when the model cannot read it at once
    images: list[bytes]
    reflection_rounds: int
    out: Path
    idea: str | None = None

    def notes(self, system: Message) -> list[list[str]]:
        """The reviewer's notes on each part but the last, one call per part."""
        out: list[list[str]] = []
        for i, text in enumerate(self.parts[:-1], start=1):
            notes = self.llm.complete(
                [system, Message.user(guidelines.part_request(self.title, i, len(self.parts), text))],
                role="review",
                output_type=PartNotes,
                node_id=self.node_id,
                idea=self.idea,
                attempt=self.index,
                context={"review": "part", "part": i},
            )
            out.append(list(notes.notes))
        return out

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        record = ReviewRecord(index=self.index, persona=self.persona, status="failed", started_at=started)
        system = Message.system(guidelines.reviewer_system(self.persona))
        n_images = len(self.images)
        try:
            request = (
                guidelines.review_request(self.title, self.parts[0], n_images)
                if len(self.parts) == 1
                else guidelines.last_part_request(
                    self.title, len(self.parts), self.notes(system), self.parts[-1], n_images
                )
            )
        except LLMError as exc:
            record.error = f"notes on the paper's parts failed: {exc}"
            return self._write(record, started)
        turns = [system, Message.user(request, self.images)]

        def ask(round_: int = 0) -> ReviewForm:
            # `attempt` = reviewer index: identical prompts are distinct samples, and a re-run is a cache hit.
            return self.llm.complete(
                turns,
                role="review",
                output_type=ReviewForm,
                node_id=self.node_id,
                idea=self.idea,
                attempt=self.index,
                context={"review": "reflect", "round": round_} if round_ else {"review": "write"},
            )

        try:
            record.form = ask()
            record.status = "ok"
            for round_ in range(1, self.reflection_rounds + 1):
                turns += [
                    Message.assistant(record.form.model_dump_json()),
                    Message.user(guidelines.reflection_request(round_, self.reflection_rounds)),
                ]
                record.form = ask(round_)
                record.reflections = round_
        except LLMError as exc:
            where = (
                "review"
                if record.form is None
                else f"reflection round {record.reflections + 1} (earlier review kept)"
            )
            record.error = f"{where} failed: {exc}"
        return self._write(record, started)

    def _write(self, record: ReviewRecord, started: float) -> AttemptResult:
        record.finished_at = time.time()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(record.model_dump_json(indent=2))
        return _finished(record.status == "ok", record.error, self.out, started)


@dataclass
class MetaReviewJob:
    """The area chair: one meta-review from the reviews that succeeded. Writes a MetaReview."""

    node_id: str
    attempt: int
    llm: LLM
    request: str
    meta: MetaReview
    out: Path
    idea: str | None = None

    def run(self, gpu_ids: Sequence[int]) -> AttemptResult:
        started = time.time()
        meta = self.meta.model_copy(update={"started_at": started})
        try:
            meta.form = self.llm.complete(
                [Message.system(guidelines.AREA_CHAIR), Message.user(self.request)],
                role="review",
                output_type=MetaReviewForm,
                node_id=self.node_id,
                idea=self.idea,
                context={"review": "meta"},
            )
        except LLMError as exc:
            meta.error = f"meta-review failed: {exc}"
        meta.finished_at = time.time()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(meta.model_dump_json(indent=2))
        return _finished(meta.form is not None, meta.error, self.out, started)


@dataclass
class _PaperState:
    paper: Paper
    key: str  # node id prefix: the idea in a run, else the file name
    checks: Future[IntegrityReport] | None = None

    @property
    def integrity(self) -> IntegrityReport:
        assert self.checks is not None
        return self.checks.result()

    records: dict[int, ReviewRecord] = field(default_factory=dict)
    meta: MetaReview | None = None
    result: ReviewResult | None = None


class _Session:
    def __init__(self, llm: LLM, cfg: ReviewConfig, executor: Executor, journal: Journal | None) -> None:
        self.llm, self.cfg, self.executor, self.journal = llm, cfg, executor, journal
        self.pending: dict[Handle, tuple[_PaperState, ReviewJob | MetaReviewJob]] = {}
        self.lost: dict[str, int] = {}

    def _event(self, event: Event) -> None:
        if self.journal is not None:
            self.journal.record(event)

    def _submit(self, state: _PaperState, job: ReviewJob | MetaReviewJob) -> None:
        self.pending[self.executor.submit(job, REVIEW_RESOURCES)] = (state, job)
        self._event(
            ReviewStarted(job=job.node_id, idea=state.paper.idea, paper=state.paper.name, attempt=job.attempt)
        )

    def start(self, state: _PaperState) -> None:
        paper, cfg = state.paper, self.cfg
        text = paper.text
        if len(text) > cfg.max_paper_chars:
            text = (
                text[: cfg.max_paper_chars]
                + f"\n[... cut: {len(text) - cfg.max_paper_chars} more characters]"
            )
        images = paper.page_images(min(cfg.page_images, len(paper.pages)))
        parts = split_paper(text, self.llm.budget("review"), cfg, paper.title, len(images))
        if len(parts) > 1:
            progress.info(
                "%s: the paper is read in %d parts (the review model's context)", paper.name, len(parts)
            )
        for k in range(cfg.reviews):
            self._submit(
                state,
                ReviewJob(
                    node_id=f"{state.key}-review-{k + 1}",
                    attempt=1,
                    llm=self.llm,
                    index=k,
                    persona=cfg.persona(k),
                    title=paper.title,
                    parts=parts,
                    images=images,
                    reflection_rounds=cfg.reflection_rounds,
                    out=paper.out_dir / REVIEWS_DIR / f"review-{k + 1}.json",
                    idea=paper.idea,
                ),
            )

    def _collect_review(self, state: _PaperState, job: ReviewJob, result: AttemptResult) -> None:
        record = ReviewRecord.model_validate_json(job.out.read_text(), context=STORED)
        record.worker = result.worker
        state.records[job.index] = record
        if len(state.records) == self.cfg.reviews:
            self._start_meta(state)

    def _start_meta(self, state: _PaperState) -> None:
        records = [state.records[k] for k in sorted(state.records)]
        good = [r.form for r in records if r.form is not None]
        if not good:
            self._finish(state)
            return
        meta = MetaReview(
            reviews_used=len(good),
            reviews_failed=len(records) - len(good),
            accept_votes=sum(f.decision == "accept" for f in good),
            aggregate=aggregate(good),
        )
        request = guidelines.meta_request(
            state.paper.title,
            [f.model_dump() for f in good],
            meta.reviews_failed,
            {n: s.model_dump() for n, s in meta.aggregate.items()},
            state.integrity.lines(),
        )
        self._submit(
            state,
            MetaReviewJob(
                node_id=f"{state.key}-meta-review",
                attempt=1,
                llm=self.llm,
                request=request,
                meta=meta,
                out=state.paper.out_dir / REVIEWS_DIR / "meta-review.json",
                idea=state.paper.idea,
            ),
        )

    def _finish(self, state: _PaperState) -> None:
        meta, reviews = state.meta, [state.records[k] for k in sorted(state.records)]
        good = [r.form for r in reviews if r.form is not None]
        overall = (
            float(meta.form.overall)
            if meta is not None and meta.form is not None
            else (meta.aggregate["overall"].mean if meta is not None else None)
        )
        state.result = ReviewResult(
            paper=state.paper.name,
            title=state.paper.title,
            idea=state.paper.idea,
            config=self.cfg,
            reviews=reviews,
            meta_review=meta,
            decision=meta.form.decision if meta is not None and meta.form is not None else None,
            overall=overall if good else None,
            integrity=state.integrity,
            created_at=time.time(),
        )
        state.result.write(state.paper.out_dir)

    def _lost(self, state: _PaperState, job: ReviewJob | MetaReviewJob, why: str) -> None:
        """A dead worker is an infrastructure fault: run the job again, a bounded number of times."""
        self.lost[job.node_id] = self.lost.get(job.node_id, 0) + 1
        if self.lost[job.node_id] <= MAX_LOST:
            job.attempt += 1
            self._submit(state, job)
            return
        failure = f"lost {MAX_LOST + 1} times: {why}"
        if isinstance(job, ReviewJob):
            job.out.write_text(
                ReviewRecord(
                    index=job.index, persona=job.persona, status="failed", error=failure
                ).model_dump_json()
            )
        else:
            job.out.write_text(
                job.meta.model_copy(update={"error": f"meta-review {failure}"}).model_dump_json()
            )
        self._done(state, job, _finished(False, failure, job.out, time.time()))

    def _done(self, state: _PaperState, job: ReviewJob | MetaReviewJob, result: AttemptResult) -> None:
        self._event(
            ReviewFinished(
                job=job.node_id,
                idea=state.paper.idea,
                paper=state.paper.name,
                attempt=job.attempt,
                status=result.status,
                reason=result.reason[:500],
                started_at=result.started_at,
                finished_at=result.finished_at,
                worker=result.worker,
            )
        )
        if isinstance(job, ReviewJob):
            self._collect_review(state, job, result)
        else:
            state.meta = MetaReview.model_validate_json(job.out.read_text(), context=STORED)
            self._finish(state)

    def drain(self) -> None:
        while self.pending:
            done = self.executor.wait(list(self.pending), timeout=WAIT_S)
            if done is None:
                continue
            state, job = self.pending.pop(done.handle)
            assert not isinstance(done.result, StepResult)  # review jobs run in one step
            if done.result is None:
                self._lost(state, job, done.lost)
            elif not job.out.is_file():
                # The job raised before writing (run_job turned that into a buggy result): record it.
                self._record_crash(state, job, done.result)
            else:
                self._done(state, job, done.result)

    def _record_crash(
        self, state: _PaperState, job: ReviewJob | MetaReviewJob, result: AttemptResult
    ) -> None:
        error = f"internal error: {result.reason[-1000:]}"
        record: ReviewRecord | MetaReview
        if isinstance(job, ReviewJob):
            record = ReviewRecord(index=job.index, persona=job.persona, status="failed", error=error)
        else:
            record = job.meta.model_copy(update={"error": error})
        job.out.parent.mkdir(parents=True, exist_ok=True)
        job.out.write_text(record.model_dump_json())
        self._done(state, job, result)


def split_paper(text: str, budget: PromptBudget, cfg: ReviewConfig, title: str, images: int) -> list[str]:
    """The paper's text in as few parts as the review role's prompt budget allows, split at
    paragraphs. Room is kept for the longest persona's system message, the attached page images,
    each reflection round's earlier form, and, in the last part's request, the notes on the others."""
    system = max(len(guidelines.reviewer_system(cfg.persona(k))) for k in range(max(1, cfg.reviews)))
    reflections = cfg.reflection_rounds * int(budget.max_tokens * budget.chars_per_token + 600)
    fixed = (
        system
        + len(title)
        + 600
        + int((images * IMAGE_TOKENS + PART_SLACK) * budget.chars_per_token)
        + reflections
    )
    room = budget.chars - fixed
    notes_chars = len(PartNotes.model_json_schema()) + 6 * 250
    if len(text) <= room:
        return [text]
    parts = 2
    while True:
        size = room - (parts - 1) * notes_chars
        if size < MIN_PART_CHARS:
            raise PromptTooLarge(
                f"role 'review': the {budget.context_tokens}-token context less max_tokens "
                f"{budget.max_tokens} leaves no room to read a {len(text)}-character paper in parts: map "
                "llm.roles.review to a model with a larger context, lower its max_tokens or "
                "review.reflection_rounds, or lower review.max_paper_chars"
            )
        if size * parts < len(text):
            parts += 1
            continue
        chunks = paragraph_chunks(text, size)  # paragraph ends may make more, shorter parts
        if len(chunks) <= parts:
            return chunks
        parts = len(chunks)


def _key(paper: Paper) -> str:
    return paper.idea or Path(paper.name).stem


def review_papers(
    papers: Sequence[Paper],
    llm: LLM,
    cfg: ReviewConfig,
    executor: Executor | None = None,
    journal: Journal | None = None,
) -> list[ReviewResult]:
    """Review every paper: N reviews each, then a meta-review; writes review.json and review.md
    beside each paper. With no executor, a thread pool of `cfg.max_parallel` is used."""
    own = executor is None
    runner: Executor = executor or InProcessExecutor(cfg.max_parallel)
    session = _Session(llm, cfg, runner, journal)
    states = [_PaperState(paper=p, key=_key(p)) for p in papers]
    # While the reviewers think, the checks that need no LLM run on a driver thread, in paper
    # order; a meta-review waits only for its own paper's checks.
    checker = ThreadPoolExecutor(1, thread_name_prefix="silva-integrity")
    try:
        for state in states:
            session.start(state)
        for state in states:
            state.checks = checker.submit(run_checks, state.paper, cfg, llm)
        session.drain()
    finally:
        checker.shutdown(wait=True, cancel_futures=True)
        if own:
            runner.shutdown()
    return [s.result for s in states if s.result is not None]
