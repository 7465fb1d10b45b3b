"""The scripted stand-in that bench/bench_real_model.py runs beside the real model, as a run
config's `scripted_fn` (`tests.realmodel.standin:respond`): the ideas example's scripted scientist
answers the search's roles, the writeup tests' scripted writer the paper's and the review tests'
scripted reviewer the review's (the scientist answers neither)."""

from __future__ import annotations

import re
from pathlib import Path

from engine.llm.providers.base import ProviderCall
from silva.llm_session import load_function
from tests.review.papers import scripted_reviewer
from tests.writeup.support import ScriptedWriter

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ideas"
SCIENTIST = load_function(f"{EXAMPLE / 'scripted_scientist.py'}:respond")
WRITER = ScriptedWriter()
MACRO = re.compile(r"\\([A-Z][A-Za-z]*)\{\}")


def listed_macros_only(answer: str, call: ProviderCall) -> str:
    """The scripted writer's text without the number macros its prompt does not list: it was
    written for the writeup tests' run (three seeds, a headline test), whose `\\Main...` macros a
    one-seed run's results.tex lacks, and an undefined macro stops the paper compiling."""
    prompt = "\n".join(m.text for m in call.messages)
    return MACRO.sub(lambda m: m.group(0) if m.group(1) in prompt else "", answer)


def respond(call: ProviderCall) -> str:
    if call.role == "writeup":
        return listed_macros_only(WRITER(call), call)
    if call.role == "review":
        return scripted_reviewer(call)
    return str(SCIENTIST(call))
