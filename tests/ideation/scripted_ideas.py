"""An offline stand-in for the ideation model: canned ideas in order (a duplicate and one that
the literature already has among them), honest reflections, and a novelty judge that searches
once and rejects an idea whose title matches a found paper's."""

import json
import os
import re
import time

IDEAS = [
    {
        "name": "smooth_asym",
        "title": "Label smoothing against asymmetric label noise",
        "hypothesis": "Label smoothing recovers most of the accuracy lost to asymmetric label noise.",
        "abstract": "We test whether label smoothing counters class-dependent label flips in linear models.",
    },
    {
        "name": "rff_speed",
        "title": "Random features for large-scale kernel machines",
        "hypothesis": "Random Fourier features approximate an RBF kernel at a fraction of its cost.",
        "abstract": "Random features approximate shift-invariant kernels for large-scale learning.",
    },
    {
        "name": "smooth_asym_again",
        "title": "Label smoothing against asymmetric label noise",
        "hypothesis": "Label smoothing recovers most of the accuracy lost to asymmetric label noise.",
        "abstract": "We test whether label smoothing counters class-dependent label flips in linear models.",
    },
    {
        "name": "loss_curriculum",
        "title": "Loss-ordered curricula for noisy labels",
        "hypothesis": "Training on low-loss samples first delays memorisation of flipped labels.",
        "abstract": "A curriculum ordered by per-sample loss as a cheap defence against label noise.",
    },
]


def _idea(k: int) -> dict:
    base = IDEAS[k % len(IDEAS)]
    return {
        **base,
        "experiments": ["baseline vs method at 30% noise", "sweep the noise rate"],
        "risks": ["small effect"],
        "metrics": [{"name": "accuracy", "direction": "maximize", "primary": True}],
        "interestingness": 6 + k % 3,
        "novelty": 5 + k % 4,
        "feasibility": 8,
    }


def _title(text: str) -> str:
    found = re.search(r"Title: (.*)", text)
    assert found is not None, "the prompt names no title"
    return found.group(1)


def respond(call) -> str:
    text = call.messages[-1].text
    step = call.context["step"]
    if step == "generate":
        archived = text.split("Archived ideas:\n", 1)[1].split("\n\n", 1)[0]
        k = 0 if archived.strip() == "(empty)" else archived.count("\n- ") + 1
        hang_at = os.environ.get("SILVA_TEST_HANG_AT_IDEA")
        if hang_at is not None and k == int(hang_at):
            time.sleep(600)  # the test kills the process here, mid-ideation
        return json.dumps(_idea(k))
    if step == "reflect":
        idea = json.loads(text.split("Your idea:\n", 1)[1].split("\n\nCriticise", 1)[0])
        return json.dumps({"critique": "clear and feasible", "idea": idea, "done": "round 2" in text})
    found = text.split("Papers found:\n", 1)[1]
    if found.startswith("(none yet)"):
        return json.dumps({"decision": "search", "query": _title(text)})
    title = _title(text).lower()
    same = re.search(r"\[(\S+)\][^\n]*?\. " + re.escape(title) + r"\.", found, re.IGNORECASE)
    if same:
        return json.dumps(
            {
                "decision": "not_novel",
                "reason": "the found paper tests this hypothesis",
                "closest": [same.group(1)],
            }
        )
    return json.dumps({"decision": "novel", "reason": "no found paper tests this", "closest": []})


def respond_unusable(call) -> str:
    """A model that never writes a valid idea: every draft lacks its fields."""
    return json.dumps({"title": "half an idea"})
