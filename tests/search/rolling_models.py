"""The scripted models of a rolling-forest run in a child process (`scripted_fn:` of its config):
the scripted scientist writes the experiments, the scripted ideation model the ideas. The child
kills itself with SIGKILL when it is asked to generate the idea named by SILVA_TEST_KILL_AT_IDEA,
as a machine that dies mid-run does: nothing after that point is journaled."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from tests.helpers import load_file
from tests.search.agentic_helpers import responder

IDEAS = load_file(Path(__file__).parents[1] / "ideation" / "scripted_ideas.py", "scripted_ideas_child")
SCIENCE = responder(plots=False)


def respond(call: Any) -> str:
    if call.role != "ideation":
        return str(SCIENCE(call))
    answer = str(IDEAS.respond(call))
    if call.context["step"] == "generate" and json.loads(answer)["name"] == os.environ.get(
        "SILVA_TEST_KILL_AT_IDEA"
    ):
        os.kill(os.getpid(), signal.SIGKILL)
    return answer
