"""The optional model layer of the claims check: the reviewer's model extracts every comparative
statement of the paper into a typed record, and each record is checked by the same deterministic
compare as a sentence the reader found (engine/claimtext.py). The record is written back as one
plain comparison sentence built from its fields, so the model never decides a verdict: it only
says what the paper states. Off unless `review.llm_claims` is true; a failed extraction leaves the
deterministic findings as they are and says so. See docs/review.md, "The model layer".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from engine.claimnames import Resolver
from engine.claims import Ledger
from engine.claimtext import SentenceCheck, check_text
from engine.llm import LLM, LLMError, Message, Transport
from engine.llm.types import Completion, Embeddings, EmbedRequest, LLMRequest
from review.paper import paragraph_chunks

# Bounded strings and lists: a small grammar-constrained model has to close every one of them.
Short = Annotated[str, StringConstraints(max_length=80)]
Number = Annotated[str, StringConstraints(max_length=16)]
Direction = Literal["better", "worse", "higher", "lower", "no difference", "not better", "not worse"]


class Statement(BaseModel):
    """One comparative statement of the paper, as the paper states it (not whether it is true)."""

    model_config = ConfigDict(extra="forbid")

    quote: str = Field(max_length=300, description="the sentence or table row, verbatim (shortened if long)")
    first: Short = Field(description="the group, method or condition the statement is about, as named")
    second: Short = Field(description="the group it is compared with, as named")
    metric: Short = Field("", description="the metric compared, as named; empty when none is named")
    direction: Direction = Field(description="what the statement says of `first` against `second`")
    significance: Literal["significant", "not significant", "unstated"] = "unstated"
    numbers: list[Number] = Field(
        default_factory=list, max_length=6, description="each number it prints as written: 0.91, 8%, 3 points"
    )


class Statements(BaseModel):
    """Every comparative statement of this part of the paper: any sentence or table row that
    relates two groups, methods or conditions (better, worse, equal, a gain or a loss)."""

    # Required and closed: an answer of another shape (a review form) is not read as "none found".
    model_config = ConfigDict(extra="forbid")
    statements: list[Statement] = Field(max_length=12)


SYSTEM = (
    "You read a research paper and list its comparative statements exactly as the paper states them, "
    "whether or not they are true. Answer with one JSON object matching the schema."
)
_DIRECTION = {
    "better": "is better than",
    "worse": "is worse than",
    "higher": "is higher than",
    "lower": "is lower than",
    "no difference": "shows no difference from",
    "not better": "is not better than",
    "not worse": "is not worse than",
}
PART_SLACK_TOKENS = 600  # the chat template and the schema, which a llama.cpp server adds as a grammar
# About two pages: a part of a dense results section holds no more statements than one answer may list.
MAX_PART_CHARS = 6000


def canonical(s: Statement, names: Resolver) -> str | None:
    """The record as one plain sentence for the deterministic compare; None when either side names
    no group of the run (a comparison with prior work, say: the deterministic reader judges those)."""
    sides = []
    for phrase in (s.first, s.second):
        m = names.group_re.search(phrase)
        if m is None:
            return None
        sides.append(m.group(0))
    verb = _DIRECTION[s.direction]
    if s.significance == "significant" and s.direction in ("better", "worse", "higher", "lower"):
        verb = verb.replace("is ", "is significantly ", 1)
    hedge = ", though not significantly" if s.significance == "not significant" else ""
    metric = f" on {s.metric}" if s.metric.strip() else ""
    numbers = f" ({', '.join(s.numbers)})" if s.numbers else ""
    return f"{sides[0]} {verb} {sides[1]}{metric}{numbers}{hedge}."


class _Counting:
    """The client's transport, counting the calls and dollars this layer adds."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.calls = 0
        self.dollars = 0.0

    def call(self, request: LLMRequest) -> Completion:
        completion = self.inner.call(request)
        self.calls += 1
        self.dollars += completion.dollars
        return completion

    def embed(self, request: EmbedRequest) -> Embeddings:
        return self.inner.embed(request)

    def ledger_note(self, request: LLMRequest, error: str) -> None:
        self.inner.ledger_note(request, error)  # a ledger line, not a call: nothing sent or paid


@dataclass
class ModelLayer:
    checks: list[tuple[Statement, SentenceCheck]] = field(default_factory=list)
    statements: int = 0
    calls: int = 0
    dollars: float = 0.0
    parts: int = 0
    error: str | None = None

    def summary(self) -> str:
        cost = f"{self.calls} call(s), ${self.dollars:.4f}"
        if self.error is not None:
            return f"the model's extraction FAILED ({self.error}; {cost}): its findings are missing"
        tied = sum(c.claim is not None for _, c in self.checks)
        return (
            f"the model's extraction ({self.statements} statement(s) from {self.parts} part(s), {tied} tied "
            f"to a claim; {cost})"
        )


def extract(text: str, ledger: Ledger, names: Resolver, llm: LLM, idea: str | None = None) -> ModelLayer:
    """Every comparative statement the model finds in `text`, each with the deterministic check
    of the sentence its fields make. An LLM error ends the layer; what it found so far is dropped."""
    counting = _Counting(llm.transport)
    client = LLM(counting, max_reasks=llm.max_reasks, budgets=llm.budgets)
    budget = llm.budget("review")
    instructions = "List every comparative statement in this part of the paper.\n\n"
    room = budget.chars - len(SYSTEM) - len(instructions) - int(PART_SLACK_TOKENS * budget.chars_per_token)
    size = min(MAX_PART_CHARS, room)
    layer = ModelLayer()
    if size < 500:
        layer.error = f"the review model's context leaves {max(size, 0)} characters per part"
        return layer
    parts = paragraph_chunks(text, size)
    layer.parts = len(parts)
    found: list[Statement] = []
    try:
        for i, part in enumerate(parts, start=1):
            answer = client.complete(
                [Message.system(SYSTEM), Message.user(instructions + part)],
                role="review",
                output_type=Statements,
                node_id=f"{idea or 'paper'}-claims",
                idea=idea,
                context={"review": "claims", "part": i},
            )
            found += answer.statements
    except LLMError as exc:
        layer.error = f"{type(exc).__name__}: {str(exc)[:300]}"
    layer.calls, layer.dollars = counting.calls, counting.dollars
    if layer.error is not None:
        return layer
    layer.statements = len(found)
    for s in found:
        sentence = canonical(s, names)
        if sentence is not None:
            layer.checks += [(s, c) for c in check_text(sentence, ledger, names)]
    return layer
