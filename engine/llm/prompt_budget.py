"""Prompts sized to the model: a role's prompt is assembled from parts by priority to fit its
model's context minus the role's `max_tokens` (the answer's room).

    budget = llm.budget("writeup")
    prompt = budget.fit([Part(ledger, priority=0, min_chars=len(ledger)), Part(log, priority=5)],
                        fixed=SYSTEM)

Each part keeps its place in the prompt; the most important parts (lowest `priority`) get their
room first, and a part the budget cannot hold whole is cut (its head or its tail) with a note
saying how much was cut. A part's `min_chars` must fit: when the minima of a prompt do not, the
model is too small for the step and `PromptTooLarge` says by how many tokens.

Tokens are estimated from characters, cautiously (`CHARS_PER_TOKEN`), by the estimate the gateway
uses too (`estimate_tokens`), so a fitted prompt passes the gateway's context check (which counts
leniently, `PROSE_CHARS_PER_TOKEN`) and the server's count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.llm.config import LLMConfig
from engine.llm.errors import LLMConfigError
from engine.llm.prices import resolve_model
from engine.llm.types import Message

# Token estimates from characters that must not fall short (prompt budgets, the gateway's dollar
# reservations, the probe): 3, not English prose's 4, because LaTeX, code and numbers run about
# three characters a token on small models' tokenizers; over-counting only leaves room unused.
CHARS_PER_TOKEN = 3.0
# Refusals count at most this many characters a token (English prose's), so that only a prompt
# that surely overflows is refused: a re-ask adds the answer that failed to a fitted prompt and
# runs past the cautious count (a SmolLM2-sized writer's re-ask did), yet the server takes it.
PROSE_CHARS_PER_TOKEN = 4.0
IMAGE_TOKENS = 1600  # a 1092x1092 image is about this many tokens on current vision models
TEMPLATE_TOKENS = 48  # the chat template's role markers around the system and user messages
CUT_NOTE = "\n[... {n} characters cut to fit the model's context]\n"

# The smallest prompt each role's steps are built to work with, in tokens: the writer's ledger,
# macros and one section's instructions; a reviewer's guidelines with one part of a paper; an
# ideation request with its topic; for any other role (a node's judgement, a figure's check),
# a code proposal's room. A model whose context minus max_tokens is below this cannot do the
# role's work: the run is refused before it starts, by the config's context and by the one the
# server reports (engine/llm/probe.py).
MIN_PROMPT_TOKENS: dict[str, int] = {"writeup": 1500, "review": 1500, "ideation": 700, "code": 1000}


def min_prompt_tokens(role: str) -> int:
    return MIN_PROMPT_TOKENS.get(role, MIN_PROMPT_TOKENS["code"])


def estimate_tokens(messages: Sequence[Message], chars_per_token: float = CHARS_PER_TOKEN) -> int:
    chars = sum(len(m.text) for m in messages)
    images = sum(len(m.images) for m in messages)
    return int(chars / chars_per_token) + images * IMAGE_TOKENS


class PromptTooLarge(LLMConfigError):
    """The parts a step cannot do without exceed the role's prompt budget."""


@dataclass(frozen=True)
class Part:
    """One piece of a prompt. `min_chars`: how much of it the step needs (0: it may be dropped);
    `keep`: the end kept when cut ("head" for instructions and listings, "tail" for logs)."""

    text: str
    priority: int = 0
    min_chars: int = 0
    keep: Literal["head", "tail"] = "head"


class PromptBudget(BaseModel):
    """What one role's prompt may hold: its model's context less the answer's `max_tokens`."""

    model_config = ConfigDict(frozen=True)

    role: str
    context_tokens: int = Field(gt=0)
    max_tokens: int = Field(gt=0)
    chars_per_token: float = Field(CHARS_PER_TOKEN, gt=0)

    @property
    def tokens(self) -> int:
        return self.context_tokens - self.max_tokens - TEMPLATE_TOKENS

    @property
    def chars(self) -> int:
        return max(0, int(self.tokens * self.chars_per_token))

    def fit(self, parts: Sequence[Part], *, fixed: str = "") -> str:
        """The parts joined in order, cut by priority to fit with `fixed` (the system message)."""
        room = self.chars - len(fixed)
        sizes = allocate([(len(p.text), min(p.min_chars, len(p.text)), p.priority) for p in parts], room)
        if sizes is None:
            need = sum(min(p.min_chars, len(p.text)) for p in parts) + len(fixed)
            raise PromptTooLarge(
                f"role {self.role!r}: the prompt needs at least ~{int(need / self.chars_per_token)} tokens, "
                f"but the {self.context_tokens}-token context less max_tokens {self.max_tokens} leaves "
                f"~{self.tokens}: map llm.roles.{self.role} to a model with a larger context or lower "
                "its max_tokens"
            )
        return "".join(cut(p.text, n, p.keep) for p, n in zip(parts, sizes, strict=True))


def allocate(parts: Sequence[tuple[int, int, int]], room: int) -> list[int] | None:
    """Characters for each (length, minimum, priority): every minimum first, then whole parts in
    priority order while they fit, the first that does not fit cut to the rest. None when the
    minima do not fit. A cut part's note takes room too, so it is counted."""
    note = len(CUT_NOTE) + 8
    sizes = [minimum for _, minimum, _ in parts]
    left = room - sum(sizes) - note * sum(0 < m < n for n, m, _ in parts)
    if left < 0:
        return None
    for i in sorted(range(len(parts)), key=lambda k: parts[k][2]):
        length, minimum, _ = parts[i]
        want = length - minimum
        if want <= 0:
            continue
        if want <= left:
            sizes[i], left = length, left - want
            continue
        if minimum == 0:
            left -= note  # the note of this part, now that it is cut
        grant = max(0, left)
        sizes[i], left = minimum + grant, left - grant
    return sizes


def cut(text: str, chars: int, keep: Literal["head", "tail"]) -> str:
    if chars >= len(text):
        return text
    if chars <= 0:
        return ""
    note = CUT_NOTE.format(n=len(text) - chars)
    return text[:chars] + note if keep == "head" else note + text[-chars:]


def budgets(cfg: LLMConfig) -> dict[str, PromptBudget]:
    """Each configured chat role's budget, from its model's `capabilities.context_tokens` (the
    start-of-run probe refuses an entry that claims more than the server serves)."""
    out: dict[str, PromptBudget] = {}
    for name, role in cfg.roles.items():
        caps = resolve_model(cfg, role.model).capabilities
        if caps.chat:
            out[name] = PromptBudget(
                role=name,
                context_tokens=caps.context_tokens,
                max_tokens=min(role.max_tokens, caps.max_output_tokens),
            )
    return out


def too_small(role_budgets: Mapping[str, PromptBudget], served: str | None = None) -> list[str]:
    """One line per role whose model cannot hold the smallest prompt of that role's steps.
    `served`: where the budgets' context was read from the server (the probe), else the config's."""
    context = (
        "its model's {}-token context" if served is None else f"the {{}}-token context that {served} reports"
    )
    remedy = "map the role to a model" if served is None else "serve the model"
    return [
        f"llm.roles.{name}: {context.format(b.context_tokens)} less max_tokens {b.max_tokens} "
        f"leaves ~{b.tokens} tokens for the prompt; the {name} steps need at least "
        f"{min_prompt_tokens(name)}: lower max_tokens to at most "
        f"{max(1, b.context_tokens - TEMPLATE_TOKENS - min_prompt_tokens(name))} or {remedy} "
        "with a larger context"
        for name, b in sorted(role_budgets.items())
        if b.tokens < min_prompt_tokens(name)
    ]
