"""What reviewers and the area chair are told, in Silva's words, and the prompts built from it.

Each call names its step (review, reflection, meta-review) in the request's `context`, which
scripted test models answer by and no real model is sent (review/ensemble.py, docs/llm.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

GUIDELINES = """\
You review a research paper submitted to a machine-learning venue. Your review helps an area chair
decide whether to accept it and helps the authors improve it.

Read the whole paper before writing. Then judge it on four things:
- Soundness: do the experiments and arguments support the claims? Are baselines fair and tuned,
  results replicated over seeds with their spread reported, and comparisons tested? A claim the
  evidence does not carry is a weakness however interesting it is.
- Presentation: could a competent reader reproduce the main result from the paper? Are figures
  legible, tables labelled, and terms defined before use?
- Contribution: what does the community learn that it did not know? Place the work against the
  related work the paper cites and the work you know of.
- Limitations and ethics: does the paper say where its method fails and what harm it could do?

Be specific: name the section, table, figure or equation you mean. Separate what is wrong from
what is missing. Prefer a question to an accusation when the paper may have an answer.

Scores. Soundness, presentation and contribution: 1 poor, 2 fair, 3 good, 4 excellent.
Overall: 1 very strong reject, 2 strong reject, 3 reject, 4 borderline reject, 5 weak reject,
6 marginal accept, 7 accept, 8 strong accept, 9 very strong accept, 10 award quality.
Confidence: 1 an educated guess, 2 unsure, 3 fairly confident, 4 confident, 5 certain.
Decision: accept or reject, consistent with your overall score (6 or more is accept).
Most submissions to a selective venue are rejected; score what the paper shows, not what it
promises."""

PERSONAS: dict[str, str] = {
    "balanced": "You are an experienced reviewer who weighs strengths and weaknesses evenly.",
    "skeptic": (
        "You are a skeptical reviewer: you look first for the experiment that would break the main "
        "claim, and you give low scores when the evidence is thin."
    ),
    "methodologist": (
        "You are a reviewer with a statistics background: you check the experimental design, the "
        "number of seeds, the variance reported, the tests used and whether the baselines were tuned."
    ),
    "practitioner": (
        "You are a reviewer who builds systems: you ask whether the method would work outside the "
        "paper's setting, what it costs, and whether the paper gives enough detail to reproduce it."
    ),
    "generalist": (
        "You are a reviewer from a neighbouring field: you judge clarity, motivation and whether "
        "the contribution matters beyond the paper's niche."
    ),
}

AREA_CHAIR = """\
You are the area chair for one paper. Independent reviewers have assessed it; you write the
meta-review and recommend the decision. Weigh the arguments, not the number of votes: one
well-supported weakness can outweigh several vague positives. Note where reviewers disagree and
say whose reading you find convincing and why. Automated integrity checks (no language model) were
also run on the paper; treat their findings as facts to weigh, each one only as serious as what it
shows. Use the same scales as the reviewers."""


def persona_text(persona: str) -> str:
    return PERSONAS.get(persona, persona)


def reviewer_system(persona: str) -> str:
    return f"{persona_text(persona)}\n\n{GUIDELINES}"


def review_request(title: str, text: str, page_images: int) -> str:
    seen = f" The first {page_images} page(s) are attached as images." if page_images else ""
    return (
        f"Review the paper below and fill in the review form.{seen}\n\n"
        f"Title: {title}\n\n<paper>\n{text}\n</paper>"
    )


def part_request(title: str, index: int, parts: int, text: str) -> str:
    """One part of a paper too long for the reviewer's model to read at once: notes, not a review."""
    return (
        f"The paper is too long to read at once; you read it in {parts} parts. This is part {index} of "
        f"{parts}. Write short notes on it for your review: what it claims, what it shows, what it "
        f"lacks.\n\nTitle: {title}\n\n<paper part {index}>\n{text}\n</paper part {index}>"
    )


def last_part_request(
    title: str, parts: int, notes: Sequence[Sequence[str]], text: str, page_images: int
) -> str:
    """The review request for the last part of a paper read in parts, with the notes on the others."""
    seen = f" The first {page_images} page(s) are attached as images." if page_images else ""
    earlier = "\n".join(
        f"Part {i + 1}:\n" + ("\n".join(f"- {n}" for n in part) or "- (no notes)")
        for i, part in enumerate(notes)
    )
    return (
        f"You read the paper in {parts} parts. Your notes on parts 1 to {parts - 1}:\n{earlier}\n\n"
        f"Now read part {parts}, the last, and fill in the review form for the whole paper.{seen}\n\n"
        f"Title: {title}\n\n<paper part {parts}>\n{text}\n</paper part {parts}>"
    )


def reflection_request(round_: int, rounds: int) -> str:
    return (
        f"Reflection round {round_} of {rounds}: read your review again against the paper. Correct "
        "anything inaccurate, add what you missed, drop points the paper already answers, and make the "
        "scores and the decision agree with the text. Return the whole revised review form."
    )


def meta_request(
    title: str,
    reviews: Sequence[dict[str, object]],
    failed: int,
    aggregate: dict[str, dict[str, float]],
    integrity: Sequence[str],
) -> str:
    missing = f" ({failed} more review(s) failed and are not included)" if failed else ""
    scores = "\n".join(f"- {name}: mean {s['mean']:.2f}, sd {s['std']:.2f}" for name, s in aggregate.items())
    checks = "\n".join(f"- {line}" for line in integrity) or "- none"
    body = "\n\n".join(
        f"<review {i + 1}>\n{json.dumps(r, indent=1)}\n</review {i + 1}>" for i, r in enumerate(reviews)
    )
    return (
        f"Paper: {title}\nYou have {len(reviews)} review(s){missing}.\n\n"
        f"Scores across the reviews:\n{scores}\n\n"
        f"Integrity check findings:\n{checks}\n\n{body}\n\n"
        "Write the meta-review form."
    )
