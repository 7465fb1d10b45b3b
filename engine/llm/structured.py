"""Structured outputs and code extraction from free text.

A pydantic model becomes a JSON schema the provider enforces natively where its capabilities say
it can (JSON-schema output or a forced tool call); otherwise the schema is asked for in words and
the JSON is extracted tolerantly (code fences, prose around it). The answer is validated here,
and a failure is turned into a re-ask that quotes the validation error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engine.llm.types import Completion, Message, OutputSchema

T = TypeVar("T", bound=BaseModel)


class ParseFailure(ValueError):
    """The answer is not (valid) JSON for the requested model; the message is shown to the model.
    `final`: a validator said a re-ask cannot help (`FinalAnswer`)."""

    def __init__(self, message: str, final: bool = False) -> None:
        super().__init__(message)
        self.final = final


class FinalAnswer(ValueError):
    """Raised by an output type's validator when the answer shows that the model has nothing
    else to give: the call fails at once instead of spending its remaining re-asks."""


def output_schema(output_type: type[BaseModel]) -> OutputSchema:
    schema = output_type.model_json_schema()
    # Named by the schema's own title (pydantic: the class name unless the model sets one), so
    # a local subclass that adds a validator keeps the name of the answer it asks for.
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(schema.get("title") or output_type.__name__))[:64]
    doc = (output_type.__doc__ or "").strip()
    return OutputSchema(name=name, schema_=schema, description=doc)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level {...} span, scanning braces outside JSON strings."""
    spans: list[str] = []
    depth, start, in_str, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def extract_json(text: str) -> Any:
    """The JSON object in an answer: the whole text, a fenced block, or the largest {...} in prose."""
    stripped = text.strip()
    candidates = [stripped] if stripped.startswith(("{", "[")) else []
    candidates += [b.code for b in extract_code_blocks(text) if b.language in ("json", "")]
    candidates += sorted(_balanced_objects(text), key=len, reverse=True)
    last_error = "no JSON object found in the answer"
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = f"invalid JSON: {exc}"
    raise ParseFailure(last_error)


def parse_output(completion: Completion, output_type: type[T]) -> T:
    data = completion.data if completion.data is not None else extract_json(completion.text)
    try:
        return output_type.model_validate(data)
    except ValidationError as exc:
        final = any(isinstance((e.get("ctx") or {}).get("error"), FinalAnswer) for e in exc.errors())
        raise ParseFailure(f"the JSON does not match the schema: {exc}", final) from exc


def reask(completion: Completion, failure: ParseFailure) -> list[Message]:
    """The turns that show the model its previous answer and what was wrong with it (for an
    answer that ended by itself; a cut one goes to `after_cut`)."""
    previous = completion.text or (json.dumps(completion.data) if completion.data is not None else "(empty)")
    return [
        Message.assistant(previous),
        Message.user(f"That answer could not be used: {failure}. Reply again with only the corrected JSON."),
    ]


MIN_STRING = 40  # characters: the shortest bound a re-ask puts on a string (a name, a short claim)
MAX_ITEMS = 8  # a list the schema leaves open holds at most this many items in a re-ask


def shorter_schema(
    schema: OutputSchema, completion: Completion, previous: int | None = None
) -> tuple[OutputSchema, int]:
    """`schema` with every string bounded so that the whole answer fits in about half the
    characters of the cut one, and every open list bounded to `MAX_ITEMS`; and the string bound.
    A grammar-constrained server (llama.cpp) then has to close each string; an answer valid
    under the bounded schema is valid under the original. `previous`: the bound of the re-ask
    that was cut again; the new one is at most half of it, so no re-ask repeats the last one."""
    doc = json.loads(json.dumps(schema.schema_))  # a deep copy the walk may change
    slots = _bound(doc, None, 1)
    limit = len(completion.text) // 2 // max(1, slots)
    if previous is not None:
        limit = min(limit, previous // 2)
    limit = max(MIN_STRING, limit)
    _bound(doc, limit, 1)
    return OutputSchema(name=schema.name, schema_=doc, description=schema.description), limit


def _bound(node: Any, limit: int | None, repeat: int) -> int:
    """Strings reached from schema `node` (a list's items counted `maxItems` times); with
    `limit`, each string gets `maxLength` at most `limit` (never under its `minLength`) and each
    list `maxItems` at most `MAX_ITEMS` (never under its `minItems`)."""
    if not isinstance(node, dict):
        return 0
    slots, inner = 0, repeat
    if node.get("type") == "string" and "enum" not in node and "const" not in node:
        slots = repeat
        if limit is not None:
            node["maxLength"] = max(node.get("minLength", 0), min(node.get("maxLength", limit), limit))
    if node.get("type") == "array":
        items = max(node.get("minItems", 0), min(node.get("maxItems", MAX_ITEMS), MAX_ITEMS))
        if limit is not None:
            node["maxItems"] = items
        inner = repeat * max(1, items)
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        for child in (node.get(key) or {}).values():
            slots += _bound(child, limit, 1 if key in ("$defs", "definitions") else repeat)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for child in node.get(key) or []:
            slots += _bound(child, limit, inner if key == "prefixItems" else repeat)
    slots += _bound(node.get("items"), limit, inner)
    slots += _bound(node.get("additionalProperties"), limit, repeat * MAX_ITEMS)
    return slots


def after_cut(turns: list[Message], completion: Completion, limit: int, tries: int = 1) -> list[Message]:
    """The turns for a re-ask of an answer cut off at the output token limit: the original ones
    and a note with the bound, without the cut text (a small model shown its runaway answer
    repeats it, and the prompt grows by the whole answer each time). The note counts the `tries`
    cut so far, so a second re-ask is never the first one's prompt (the response cache would
    hand back the same cut answer)."""
    cut = "Your previous answer" if tries == 1 else f"Your previous {tries} answers"
    note = (
        f"{cut} ran past the output limit ({completion.usage.output_tokens} tokens) and "
        f"{'was' if tries == 1 else 'were'} discarded. Answer again, briefly: one JSON object, every "
        f"string at most {limit} characters, every list at most {MAX_ITEMS} items."
    )
    last = turns[-1]
    if last.role == "user" and not last.images:
        return [*turns[:-1], Message.user(f"{last.text}\n\n{note}")]
    return [*turns, Message.user(note)]


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str
    closed: bool


_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+#.-]*)[^\n]*$", re.MULTILINE)


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Fenced blocks in order. A fence left open at the end (a truncated answer) yields its rest."""
    blocks: list[CodeBlock] = []
    pos = 0
    while (opening := _FENCE.search(text, pos)) is not None:
        fence, language = opening.group(1), opening.group(2).lower()
        body_start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, body_start)
        if end is None:
            blocks.append(CodeBlock(language, text[body_start:].rstrip(), closed=False))
            break
        blocks.append(CodeBlock(language, text[body_start : end.start()].rstrip("\n"), closed=True))
        pos = end.end()
    return blocks


_ALIASES = {"python": ("python", "py", "python3"), "bash": ("bash", "sh", "shell")}


def extract_code(text: str, language: str = "python") -> str | None:
    """The main code block of an answer: the longest block tagged with the language, else the
    longest untagged one, else None. Complete blocks win over one cut off by truncation."""
    names = _ALIASES.get(language, (language,))
    blocks = extract_code_blocks(text)
    for wanted in (lambda b: b.language in names, lambda b: b.language == ""):
        chosen = [b for b in blocks if wanted(b) and b.code.strip()]
        if chosen:
            return max(chosen, key=lambda b: (b.closed, len(b.code))).code
    return None
