"""The LLM writer: figures script, literature search with justified picks, the paper section by
section, a bounded compile-fix loop, then reflection rounds fed by chktex, the LaTeX log, the
page count, the number checker, citation checks and the vision model's review of figures and
rendered pages.

Every call names its step in the request's `context` (`{"step": "section", "name": "Results"}`:
scripted providers answer by it, no real model is sent it), and every prompt is a pure function
of the run and the previous answers: a resumed writeup sends the same requests, so the gateway's
cache answers every call already paid for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

from pydantic import BaseModel, Field

from engine.claims import LiteratureRecord
from engine.llm import (
    LEDGER_FILE,
    LLM,
    CallRecord,
    Completion,
    LLMError,
    Message,
    StructuredOutputError,
    extract_code,
)
from engine.llm.prompt_budget import Part, PromptTooLarge
from writeup.claim_sentences import contradictions
from writeup.figures import make_figures
from writeup.latex import Section, cite_keys, latex_block, render_paper
from writeup.literature import Literature, LiteratureError, Paper, bibtex, cite_key
from writeup.offline import figure_env

if TYPE_CHECKING:
    from writeup.draft import Paper as PaperJob
    from writeup.draft import Version
    from writeup.results import ResultsMacros

ROLE = "writeup"
M = TypeVar("M", bound=BaseModel)
SYSTEM = (
    "You are a careful ML researcher writing a paper about experiments that were actually run. "
    "Write LaTeX. Never type a number: every number comes from the \\macros listed (results.tex). "
    "Cite only with \\cite{key} using the keys given; never invent a key."
)


# Bounded strings and closed shapes: a small model's grammar-constrained answer must close its
# strings within max_tokens, and an open mapping gives it nothing to close.
class Queries(BaseModel):
    queries: list[Annotated[str, Field(max_length=120)]] = Field(
        max_length=3, description="literature search queries, empty when done"
    )


class Pick(BaseModel):
    paper_id: str = Field(max_length=64)
    justification: str = Field(max_length=200, description="one line: why the paper is cited")


class Picks(BaseModel):
    picks: list[Pick] = Field(max_length=8)


class Title(BaseModel):
    title: str = Field(max_length=150)


class Caption(BaseModel):
    figure: str = Field(max_length=80, description="the figure's file name")
    caption: str = Field(max_length=200, description="what the figure shows (no typed numbers)")


class Captions(BaseModel):
    captions: list[Caption] = Field(max_length=4)

    def of(self, name: str) -> str:
        return next((c.caption for c in self.captions if c.figure == name), "")


class FigureReview(BaseModel):
    acceptable: bool
    feedback: str = Field("", max_length=300)


class PageReview(BaseModel):
    issues: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=5)


class LedgerReader:
    """This paper's calls as the gateway recorded them (dollars, cache hits), read as they arrive."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0

    def new_calls(self, idea: str) -> list[CallRecord]:
        if not self.path.is_file():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        records = []
        for line in complete.splitlines():
            try:
                rec = CallRecord.model_validate_json(line)
            except ValueError:
                continue
            if rec.idea == idea and rec.stage == "writeup":
                records.append(rec)
        return records


def ledger_lines(macros: ResultsMacros) -> str:
    """One line per claim: id, groups, metric and its role, verdict, p, and its macros' prefix."""
    ledger, lines = macros.ledger, []
    for c in ledger.claims:
        if c.same_runs_as:
            continue
        p = "untested" if c.p is None else f"p={c.p:.3g}"
        headline = " [HEADLINE: the hypothesis]" if c.headline else ""
        lines.append(
            f"- {c.id}{headline}: {_group(macros, c.subject.label)} vs {_group(macros, c.reference.label)} "
            f"on {c.metric} "
            f"({c.role} metric): {c.verdict} at alpha {c.alpha} ({p}); macros \\{macros.claim_base[c.id]}*"
        )
    note = f"The headline uses the {ledger.headline_note}." if ledger.headline_note else ""
    return "\n".join(lines) + ("\n" + note if note else "")


def _group(macros: ResultsMacros, label: str) -> str:
    """A group as the prompt lists it: the name a paper uses, and the label the macros cite."""
    name = macros.name(label)
    return f"'{name}'" if name.lower() == label.lower() else f"'{name}' (label '{label}')"


_LATEX_TOKEN = re.compile(r"\\(?:begin|end)\{[^}]*\}|\\.|[{}$]", re.DOTALL)


def close_groups(body: str) -> str:
    """A model's LaTeX cut at max_tokens ends inside a group, math or an environment: drop the
    closing braces nothing opened, then close what is still open, innermost first, so one cut
    section does not keep the whole paper from compiling."""
    out: list[str] = []
    opened: list[str] = []  # "{", "$" or an environment's name
    at = 0
    for m in _LATEX_TOKEN.finditer(body):
        out.append(body[at : m.start()])
        at, tok = m.end(), m.group()
        if tok.startswith(("\\begin{", "\\end{")):
            name = tok[tok.index("{") + 1 : -1]
            if tok.startswith("\\begin{"):
                opened.append(name)
            elif opened and opened[-1] == name:
                opened.pop()
        elif tok == "{" or (tok == "$" and (not opened or opened[-1] != "$")):
            opened.append(tok)
        elif tok == "$":
            opened.pop()
        elif tok == "}":
            if "{" not in opened:
                continue  # a closer nothing opened
            while opened.pop() != "{":
                pass
        out.append(tok)
    out.append(body[at:])
    closers = {"{": "}", "$": "$"}
    return "".join(out) + "".join(closers.get(o, f"\n\\end{{{o}}}") for o in reversed(opened))


def _numbered(tex: str) -> str:
    return "\n".join(f"{i:4d}| {line}" for i, line in enumerate(tex.splitlines(), start=1))


class LLMWriter:
    def __init__(self, paper: PaperJob, llm: LLM, literature: Literature | None) -> None:
        self.p = paper
        self.llm = llm
        self.literature = literature
        self.bib: dict[str, Paper] = {}  # verified entries by cite key
        self.ledger = LedgerReader(paper.run.run_dir / LEDGER_FILE)

    # -- one call ------------------------------------------------------------------------------
    def ask(
        self,
        step: str,
        prompt: str,
        output_type: type[BaseModel] | None = None,
        images: list[bytes] | None = None,
        role: str = ROLE,
        **kv: object,
    ) -> object:
        messages = [Message.system(SYSTEM), Message.user(prompt, images=images or [])]
        out = self.llm.complete(
            messages,
            role=role,
            output_type=output_type,
            idea=self.p.idea.name,
            stage="writeup",
            context={"step": step, **kv},
        )
        calls = self.ledger.new_calls(self.p.idea.name)
        self.p.log(
            "llm_call",
            call=step,
            role=role,
            **kv,
            calls=len(calls),
            dollars=sum(c.dollars for c in calls),
            cache_hits=sum(c.cache_hit for c in calls),
        )
        return out.text if isinstance(out, Completion) else out

    def context(self) -> list[Part]:
        """What every writing prompt starts with, by priority: the idea and the claim ledger whole,
        the macros (the numbers) next, the experimental journal with what room is left."""
        i = self.p.idea
        idea = (
            f"Title of the idea: {i.title}\nHypothesis: {i.hypothesis}\nMethod: {i.method}. "
            f"{i.method_description}\nPrimary metric: {i.primary.name} ({i.primary.direction})\n\n"
        )
        claims = (
            "Claims of the ledger: the only comparisons you may state, each with the verdict its test "
            "supports (no 'better' or 'significant' without it). End every sentence that compares two "
            "groups with \\claim{id}. Call each group by its quoted name, never by its label; define an "
            "abbreviation before you use it ('random Fourier features (RFF)').\n"
            + ledger_lines(self.p.macros)
            + "\n\n"
        )
        macros = f"Macros of results.tex (the only numbers you may print):\n{self.p.macros.describe()}\n\n"
        journal = f"Experimental journal:\n{i.notes_md}\n\n"
        return [
            Part(idea, priority=0, min_chars=min(len(idea), 1200)),
            Part(claims, priority=0, min_chars=len(claims)),
            Part(macros, priority=2, min_chars=min(len(macros), 2400)),
            Part(journal, priority=8),
        ]

    def prompt(self, *step: Part, context: bool = True, role: str = ROLE) -> str:
        """The step's parts after the context, fitted to the role model's prompt budget."""
        parts = [*self.context(), *step] if context else list(step)
        return self.llm.budget(role).fit(parts, fixed=SYSTEM)

    # -- the whole paper -----------------------------------------------------------------------
    def write(self) -> Version:
        self.figures()
        self.cite()
        tex = self.draft()
        version = self.compile_fixed(tex, "draft")
        for r in range(1, self.p.cfg.reflection_rounds + 1):
            issues = self.issues(version)
            self.p.log("reflection", round=r, issues=issues)
            if not issues:
                break
            prompt = self.whole_paper_prompt(
                version.tex,
                Part("Issues to fix:\n" + "\n".join(f"- {x}" for x in issues) + "\n\n", priority=2),
                Part(
                    f"The current paper.tex:\n```latex\n{version.tex}\n```\n", min_chars=len(version.tex) + 40
                ),
                Part("Answer with the whole revised paper.tex in one ```latex block.", min_chars=80),
                context=True,
            )
            if prompt is None:
                break
            answer = str(self.ask("revise", prompt, round=r))
            revised = self.accept(latex_block(answer), version.tex)
            if revised == version.tex:
                break
            version = self.compile_fixed(revised, f"reflection-{r}")
        best = self.p.best or version
        return self.p.finalize(best, set(self.bib))

    def whole_paper_prompt(self, tex: str, *parts: Part, context: bool = False) -> str | None:
        """A step whose answer is the whole paper.tex: None (logged) when the role's model cannot
        hold the paper in its prompt or in its answer, so the step is skipped, not cut."""
        budget = self.llm.budget(ROLE)
        if len(tex) / budget.chars_per_token > budget.max_tokens:
            self.p.log(
                "whole_paper_skipped",
                why=f"paper.tex is ~{int(len(tex) / budget.chars_per_token)} tokens, more than the "
                f"writeup role's max_tokens {budget.max_tokens}",
            )
            return None
        try:
            return self.prompt(*parts, context=context)
        except PromptTooLarge as e:
            self.p.log("whole_paper_skipped", why=str(e))
            return None

    def figures(self) -> None:
        data = json.dumps({k: v for k, v in self._figure_schema().items()})
        answer = str(
            self.ask(
                "figures",
                self.prompt(
                    Part(
                        "Write a Python script (matplotlib, Agg backend) that reads figure_data.json "
                        f"(structure: {data}) and saves two or three compound PNG figures into figures/ "
                        "that together show the stages' results with error bars and the seeds. Nothing "
                        "else is readable.",
                        min_chars=600,
                    )
                ),
            )
        )
        self.p.figures, origin = make_figures(
            self.p.idea, self.p.macros, self.p.dir, self.p.provider, script=extract_code(answer) or None
        )
        self.p.log("figures", origin=origin, files=[f.name for f in self.p.figures])

    def _figure_schema(self) -> dict[str, str]:
        return {
            "primary": "metric name",
            "metrics": "[metric names]",
            "directions": "{metric: maximize|minimize}",
            "main_stage": "stage of the headline comparison",
            "names": "{label: the group's readable name, for axis labels}",
            "stages": "[{stage, groups: {label: {metric: {mean, std, n, values: [per seed]}}}}]",
        }

    def cite(self) -> None:
        if self.literature is None:
            return
        chosen: list[str] = []
        for r in range(1, self.p.cfg.citation_rounds + 1):
            if len(self.bib) >= self.p.cfg.max_citations:
                break
            q = self.ask(
                "queries",
                self.prompt(
                    Part(f"Already chosen: {', '.join(chosen) or 'nothing'}\n", priority=3),
                    Part(
                        "Propose up to three literature search queries for related work, or none when "
                        "the paper is covered.",
                        min_chars=120,
                    ),
                ),
                Queries,
                round=r,
            )
            assert isinstance(q, Queries)
            if not q.queries:
                break
            found = self._search(q.queries)
            if found:
                chosen += self._pick(found, r)
        # The paper may cite only what the search returned: the reviewer holds the .bib to this record.
        LiteratureRecord(entries={k: p.id for k, p in self.bib.items()}).write(self.p.dir)

    def _search(self, queries: list[str]) -> dict[str, Paper]:
        """The papers the literature search returns for the queries, by id; a failed query is logged."""
        assert self.literature is not None
        found: dict[str, Paper] = {}
        for query in queries:
            try:
                results = self.literature.search(query, self.p.cfg.papers_per_query)
            except LiteratureError as e:
                self.p.log("literature_error", query=query, error=str(e))
                continue
            self.p.log("literature_search", query=query, results=len(results))
            found.update({paper.id: paper for paper in results})
        return found

    def _pick(self, found: dict[str, Paper], r: int) -> list[str]:
        """The model's picks among `found` added to the .bib (an id it invents is refused); their titles."""
        listing = "\n".join(
            p.summary() + (f"\n    {p.abstract[:300]}" if p.abstract else "") for p in found.values()
        )
        picks = self.ask(
            "picks",
            self.prompt(
                Part(f"Search results:\n{listing}\n\n", priority=2, min_chars=min(len(listing), 800)),
                Part(
                    "Pick the papers this paper should cite (by id, as shown in brackets), each with "
                    "a one-line justification.",
                    min_chars=120,
                ),
            ),
            Picks,
            round=r,
        )
        assert isinstance(picks, Picks)
        titles = []
        for pick in picks.picks:
            paper = found.get(pick.paper_id)
            if paper is None:
                self.p.log("citation_rejected", paper_id=pick.paper_id, why="not among the search results")
                continue
            key = cite_key(paper)
            while key in self.bib and self.bib[key].id != paper.id:
                key += "b"
            self.bib[key] = paper
            titles.append(paper.title)
            self.p.log(
                "citation", key=key, paper_id=paper.id, title=paper.title, justification=pick.justification
            )
        return titles

    def bibtex(self) -> str:
        return "".join(bibtex(paper, key) for key, paper in self.bib.items())

    def draft(self) -> str:
        figs = self.p.figures
        names = ", ".join(f.name for f in figs)
        ask = Part(f"Write one caption per figure (no typed numbers): {names}", min_chars=len(names) + 60)
        captions = self.optional("captions", self.prompt(ask), Captions, Captions(captions=[]))
        keys = (
            "\n".join(f"{k}: {p.summary()}" for k, p in self.bib.items()) or "(none: write without citations)"
        )
        captions = Captions(
            captions=[c.model_copy(update={"caption": close_groups(c.caption)}) for c in captions.captions]
        )
        figure_list = "\n".join(f"\\ref{{{f.label}}}: {captions.of(f.name)}" for f in figs)
        asked = Part("Give the paper a title.", min_chars=30)
        title = self.optional("title", self.prompt(asked), Title, Title(title=self.p.idea.title[:150]))
        sections: list[Section] = []
        written = ""
        for name in ("Abstract", *self.p.cfg.sections):
            answer = str(
                self.ask(
                    "section",
                    self.section_prompt(name, keys, figure_list, written),
                    name=name.replace(" ", "_"),
                )
            )
            body = close_groups(latex_block(answer) or answer)
            if name == "Results":
                body = "".join(figure_env(f, captions.of(f.name)) for f in figs) + body
            if name == "Abstract":
                abstract = body
            else:
                sections.append(Section(name, body))
            written += f"\n% {name}\n{body}"
        return render_paper(
            template=self.p.cfg.template,
            title=title.title,
            author="Silva",
            abstract=abstract,
            sections=sections,
            cite=bool(self.bib),
        )

    def optional(self, step: str, prompt: str, output_type: type[M], default: M) -> M:
        """A step the paper can do without (captions, the title): an answer that never validated
        is logged and `default` stands in, instead of the whole paper falling back."""
        try:
            answer = self.ask(step, prompt, output_type)
        except StructuredOutputError as e:
            self.p.log("step_failed", call=step, error=str(e)[:300], used=default.model_dump())
            return default
        assert isinstance(answer, output_type)
        return answer

    def section_prompt(self, name: str, keys: str, figure_list: str, written: str) -> str:
        """One section's prompt: what was written so far is the first to be cut, from its start."""
        return self.prompt(
            Part(f"Citable keys:\n{keys}\n\n", priority=1, min_chars=min(len(keys) + 16, 400)),
            Part(
                f"Figures (each must be referenced once in Results with \\ref):\n{figure_list}\n\n",
                priority=1,
                min_chars=min(len(figure_list) + 70, 600),
            ),
            Part(f"Written so far:\n{written}\n\n", priority=9, keep="tail"),
            Part(
                f"Write the body of the section '{name}' (no \\section command) in one ```latex block.",
                min_chars=120,
            ),
        )

    def accept(self, tex: str | None, previous: str) -> str:
        """A revision must keep the skeleton: the style, results.tex and the document."""
        needed = (
            f"\\usepackage{{silva-{self.p.cfg.template}}}",
            "\\input{results.tex}",
            "\\begin{document}",
            "\\end{document}",
        )
        if tex is None or any(n not in tex for n in needed):
            self.p.log("revision_rejected", why="the answer lost the preamble, results.tex or the document")
            return previous
        return tex

    def compile_fixed(self, tex: str, round_: str) -> Version:
        version = self.p.try_version(tex, self.bibtex(), round_)
        for k in range(1, self.p.cfg.max_fix_rounds + 1):
            if version.compiled.ok:
                break
            errors = "\n".join(str(e) for e in version.compiled.errors[:8])
            numbered = _numbered(version.tex)
            prompt = self.whole_paper_prompt(
                version.tex,
                Part(f"paper.tex does not compile. LaTeX errors (file:line):\n{errors}\n\n", min_chars=600),
                Part(f"paper.tex with line numbers:\n{numbered}\n\n", min_chars=len(numbered) + 40),
                Part("Answer with the whole corrected paper.tex in one ```latex block.", min_chars=80),
            )
            if prompt is None:
                break
            answer = str(self.ask("fix", prompt, round=k))
            fixed = self.accept(latex_block(answer), version.tex)
            if fixed == version.tex:
                continue
            version = self.p.try_version(fixed, self.bibtex(), f"{round_}-fix-{k}")
        return version

    def issues(self, v: Version) -> list[str]:
        out: list[str] = []
        if not v.compiled.ok:
            out += [f"LaTeX error: {e}" for e in v.compiled.errors[:8]]
        out += [f"LaTeX warning: {w}" for w in v.compiled.warnings[:8]]
        out += [str(c) for c in v.chktex[:10]]
        if v.compiled.body_pages > self.p.cfg.page_limit:
            out.append(
                f"the body runs {v.compiled.body_pages} pages; the {self.p.cfg.template} limit is "
                f"{self.p.cfg.page_limit} (references excluded): shorten it"
            )
        out += v.numbers.issues()
        out += [c.issue() for c in contradictions(v.tex, self.p.macros)]
        bad = sorted({k for k in cite_keys(v.tex) if k not in self.bib})
        if bad:
            out.append(
                f"unresolved citation keys {', '.join(bad)}: use only {', '.join(self.bib) or 'no citations'}"
            )
        for f in self.p.figures:
            n = v.tex.count(f"\\ref{{{f.label}}}")
            if n == 0:
                out.append(f"figure {f.label} is never referenced in the text")
        out += self.vision(v)
        return out

    def vision(self, v: Version) -> list[str]:
        """The vision model's review of each figure with its caption and of the rendered pages."""
        out: list[str] = []
        try:
            for f in self.p.figures:
                review = self.ask(
                    "review_figure",
                    f"Review this figure of the paper with its caption: does it show what "
                    f"the caption says, legibly?\nCaption: {_caption(v.tex, f.label)}",
                    FigureReview,
                    images=[f.path.read_bytes()],
                    role="vision",
                    figure=f.name,
                )
                assert isinstance(review, FigureReview)
                if not review.acceptable:
                    out.append(f"figure {f.label}: {review.feedback}")
            if v.compiled.ok and self.p.best is not None:
                pages = self.p.texbox().render("paper.pdf", dpi=50)
                review = self.ask(
                    "review_pages",
                    "Review the layout of these rendered pages (overflowing tables or "
                    "figures, empty space, unreadable text).",
                    PageReview,
                    images=[pg.read_bytes() for pg in pages[:8]],
                    role="vision",
                )
                assert isinstance(review, PageReview)
                out += [f"layout: {x}" for x in review.issues]
        except LLMError as e:  # no vision role, or a model without vision: the review is skipped, said so
            self.p.log("vision_skipped", why=str(e)[:300])
        return out


def _caption(tex: str, label: str) -> str:
    at = tex.find(f"\\label{{{label}}}")
    start = tex.rfind("\\caption{", 0, at)
    return tex[start + 9 : at].rstrip("}") if at >= 0 and start >= 0 else ""
