"""One operator attempt at a time: diffs, claims, the sandboxed parser, the status rules."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.llm import LLMConfig, build_gateway
from engine.llm.prompt_budget import PromptBudget
from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider
from engine.node import AttemptResult, MetricSpec, Node
from sandbox.base import Limits
from search.agentic.operators.claims import ClaimBook
from search.agentic.operators.diff import DiffError, apply_unified_diff
from search.agentic.operators.job import Ask, Attempt, CycleJob
from search.agentic.operators.outcome import OperatorOutcome
from search.agentic.operators.prompts import OPERATOR_TASKS, SYSTEM, CodeRequest, code_prompt, contract
from search.agentic.operators.schemas import Judgement, Proposal, accept, proposal_type
from search.idea import Idea
from tests.search.agentic_helpers import LLM

PARENT = "import json\nx = 1\n\nprint(x)\njson.dump({'metrics': {'acc': x / 2}}, open('results.json', 'w'))\n"
GOOD = "import json\njson.dump({'metrics': {'acc': 0.75}}, open('results.json', 'w'))\n"
OK_JUDGEMENT = {"is_buggy": False, "reason": "fine", "summary": "acc 0.75"}


def test_diff_applies_despite_wrong_numbers_and_lost_blank_context() -> None:
    diff = (
        "--- a/experiment.py\n+++ b/experiment.py\n@@ -9,4 +9,4 @@\n import json\n-x = 1\n+x = 2\n\n "
        "print(x)\n"
    )
    assert apply_unified_diff(PARENT, diff) == PARENT.replace("x = 1", "x = 2")
    with pytest.raises(DiffError, match="hunk 1 does not match"):
        apply_unified_diff(PARENT, "@@ -1,1 +1,1 @@\n-y = 3\n+y = 4\n")
    with pytest.raises(DiffError, match="no hunks"):
        apply_unified_diff(PARENT, "just prose")


def test_a_diff_that_fails_falls_back_to_the_whole_file() -> None:
    bad = "@@ -1,1 +1,1 @@\n-nothing like this\n+x\n"
    got = accept(Proposal(plan="p", diff=bad, code=GOOD), PARENT)
    assert got.code == GOOD and got.change == "diff_failed_whole_file" and "does not match" in got.diff_error
    with pytest.raises(ValueError, match="send the whole experiment.py"):
        accept(Proposal(plan="p", diff=bad), PARENT)
    assert accept(Proposal(plan="p", plot_code="plot"), PARENT).change == "plot_only"


def test_claims_let_one_node_win_a_setting(tmp_path: Path) -> None:
    book = ClaimBook(tmp_path, "idea", "hyperparameter", "hyperparameter")
    assert book.claim('{"lr": 0.1}', "n0001") is None
    assert book.claim('{"lr": 0.1}', "n0002") == "n0001"
    assert book.claim('{"lr": 0.1}', "n0001") is None  # a later attempt of the owner keeps it
    assert book.tried() == [("n0001", '{"lr": 0.1}')]


def run_job(
    tmp: Path,
    answer: Callable[[ProviderCall], str],
    *,
    dollars: float | None = None,
    price: float = 0.0,
    **kw: Any,
) -> tuple[AttemptResult, ScriptedProvider]:
    llm = json.loads(json.dumps(LLM))
    llm["models"]["sci"]["price"] = {"input": price, "output": price}
    provider = ScriptedProvider("offline", fn=answer)
    gateway = build_gateway(LLMConfig.model_validate(llm), tmp, dollars, {}, providers={"offline": provider})
    fields: dict[str, Any] = dict(
        node_id="n0001",
        attempt=1,
        run_dir=tmp,
        idea="idea",
        stage="preliminary",
        operator="improve",
        metrics=[MetricSpec(name="acc", primary=True)],
        limits=Limits(wall_s=20),
        plot_limits=Limits(wall_s=20),
        sandbox="none",
        python=sys.executable,
        seed=0,
    )
    ask = Ask(prompt="Improve the experiment.", parent_code=PARENT, claims=kw.pop("claims", None))
    ask.parent_code = kw.pop("parent_code", ask.parent_code)
    client = kw.pop("llm", gateway.client())
    try:
        return CycleJob(Attempt(**{**fields, **kw}), client, ask).run([]), provider
    finally:
        gateway.close()


def scripted(code: dict[str, Any], judgement: dict[str, Any] = OK_JUDGEMENT) -> Callable[[ProviderCall], str]:
    return lambda call: json.dumps(code if call.role == "code" else judgement)


def test_metrics_come_from_results_json_never_from_printed_output(tmp_path: Path) -> None:
    printed = "print('acc: 0.99')\nprint('{\"metrics\": {\"acc\": 0.99}}')\n"
    r, _ = run_job(tmp_path, scripted({"plan": "p", "code": printed}))
    assert r.status == "buggy" and r.reason == "no results.json written" and r.metrics == []
    assert op(r).status_rule == "execution" and op(r).judgement.reason == "fine"  # type: ignore[union-attr]

    nan = "import json\njson.dump({'metrics': {'acc': float('nan')}}, open('results.json', 'w'))\n"
    r, _ = run_job(tmp_path / "nan", scripted({"plan": "p", "code": nan}))
    assert r.status == "buggy" and "not finite" in r.reason


def test_the_llm_judgement_can_mark_a_clean_run_buggy(tmp_path: Path) -> None:
    verdict = {"is_buggy": True, "reason": "evaluates on the training data", "summary": "leaky"}
    r, _ = run_job(tmp_path, scripted({"plan": "p", "code": GOOD}, verdict))
    assert r.status == "buggy" and r.reason == "judged buggy: evaluates on the training data"
    assert op(r).status_rule == "judgement" and r.metrics[0].value == 0.75  # recorded anyway
    assert r.code == GOOD and r.plan == "p" and op(r).llm_calls == 2


def test_a_diff_that_cannot_apply_is_reasked_for_the_whole_file(tmp_path: Path) -> None:
    def answer(call: ProviderCall) -> str:
        if call.role != "code":
            return json.dumps(OK_JUDGEMENT)
        if any("send the whole experiment.py" in m.text for m in call.messages):
            return json.dumps({"plan": "p", "code": GOOD})
        return json.dumps({"plan": "p", "diff": "@@ -1,1 +1,1 @@\n-absent\n+x\n"})

    r, provider = run_job(tmp_path, answer)
    assert r.status == "good" and op(r).code_change == "whole_file" and op(r).llm_calls == 3
    assert [c.role for c in provider.calls] == ["code", "code", "feedback"]


def test_unusable_answers_make_a_buggy_node_not_a_loop(tmp_path: Path) -> None:
    r, provider = run_job(tmp_path, lambda call: "I would rather not.")
    assert r.status == "buggy" and r.reason.startswith("proposal failed") and op(r).status_rule == "proposal"
    assert len(provider.calls) == 3  # the answer plus two bounded re-asks
    assert op(r).llm_calls == 3  # the chain's give-up is a ledger line, not a call


def test_spent_dollars_give_the_attempt_back(tmp_path: Path) -> None:
    r, provider = run_job(tmp_path, scripted({"plan": "p", "code": GOOD}), dollars=0.0, price=1.0)
    assert r.refusal is not None and r.refusal.budget == "dollars" and "budget" in r.refusal.message
    assert provider.calls == []  # refused before the call was made


def test_a_claimed_setting_is_reasked_until_untried(tmp_path: Path) -> None:
    book = ClaimBook(tmp_path, "idea", "hyperparameter", "hyperparameter")
    book.claim('{"lr": 0.1}', "n0000")

    def answer(call: ProviderCall) -> str:
        if call.role != "code":
            return json.dumps(OK_JUDGEMENT)
        lr = 0.2 if any("already tried by node n0000" in m.text for m in call.messages) else 0.1
        return json.dumps({"plan": "p", "code": GOOD, "hyperparameters": {"lr": lr}})

    r, _ = run_job(tmp_path, answer, operator="hyperparameter", stage="hyperparameter", claims=book)
    assert r.status == "good" and op(r).hyperparameters == {"lr": 0.2}
    assert [k for _, k in book.tried()] == ['{"lr": 0.1}', '{"lr": 0.2}']


def test_naming_only_listed_settings_marks_the_node_exhausted_and_a_race_does_not(tmp_path: Path) -> None:
    book = ClaimBook(tmp_path, "idea", "ablation", "ablation")
    book.claim("no_filter", "n0000")
    book.claim("no_aug", "n0002")

    def stubborn(call: ProviderCall) -> str:  # a model with no other ablation to offer
        if call.role != "code":
            return json.dumps(OK_JUDGEMENT)
        return json.dumps({"plan": "p", "code": GOOD, "ablation": "no_filter"})

    listed = ClaimBook(tmp_path, "idea", "ablation", "ablation", listed=frozenset({"no_filter", "no_aug"}))
    r, _ = run_job(tmp_path, stubborn, operator="ablation", stage="ablation", claims=listed)
    assert r.status == "buggy" and op(r).exhausted and op(r).status_rule == "proposal"
    assert op(r).llm_calls == 2  # told once, it named a tried one again: its last re-ask is not paid

    # The claims were made after the prompt was written: a race. The re-ask lists every claim,
    # and a model that then names a new one is not exhausted...
    reasks: list[str] = []

    def racer(call: ProviderCall) -> str:
        if call.role != "code":
            return json.dumps(OK_JUDGEMENT)
        reasks.extend(m.text for m in call.messages[2:] if m.role == "user")
        return json.dumps({"plan": "p", "code": GOOD, "ablation": "no_dropout" if reasks else "no_filter"})

    r, _ = run_job(tmp_path, racer, operator="ablation", stage="ablation", claims=book)
    assert r.status == "good" and not op(r).exhausted and op(r).ablation == "no_dropout"
    assert "tried so far: no_filter; no_aug" in reasks[0]
    # ...while one that names a listed one after being shown the list has run out.
    r, _ = run_job(tmp_path, stubborn, operator="ablation", stage="ablation", claims=book)
    assert r.status == "buggy" and op(r).exhausted and op(r).llm_calls == 2


def test_heldout_reruns_see_the_heldout_split_and_data(tmp_path: Path) -> None:
    data = tmp_path / "test.csv"
    data.write_text("1,2\n")
    code = (
        "import json, os\np = json.load(open('silva_params.json'))\njson.dump({'metrics': {'acc': "
        "float(p['split'] == 'heldout' and os.path.exists('data/heldout/test.csv'))}}, open('results.json', "
        "'w'))\n"
    )
    r, provider = run_job(
        tmp_path,
        scripted({}),
        operator="heldout",
        llm=None,
        parent_code=code,
        split="heldout",
        data={"data/heldout/test.csv": data},
    )
    assert r.status == "good" and r.metrics[0].value == 1.0 and provider.calls == []


def test_declared_artifacts_outside_the_workspace_are_not_kept(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("x")
    code = (
        "import json\nopen('curve.csv', 'w').write('1')\njson.dump({'metrics': {'acc': 1.0}, "
        "'artifacts': ['curve.csv', '../../../secret.txt', '/etc/passwd']}, open('results.json', 'w'))\n"
    )
    r, _ = run_job(tmp_path, scripted({"plan": "p", "code": code}))
    assert r.status == "good"
    assert sorted(Path(a).name for a in r.artifacts) == ["curve.csv", "experiment.py", "results.json"]


def op(r: AttemptResult) -> OperatorOutcome:
    assert isinstance(r.outcome, OperatorOutcome)
    return r.outcome


def test_each_step_gets_its_own_bounded_schema() -> None:
    """A first draft is asked for no setting and no ablation; each step's strings are bounded."""
    draft = proposal_type("draft", "", "n1", None).model_json_schema()
    assert set(draft["properties"]) == {"plan", "code", "diff", "plot_code"}
    assert draft["properties"]["plan"]["maxLength"] == 600
    tuning = proposal_type("hyperparameter", PARENT, "n2", None).model_json_schema()
    assert "hyperparameters" in tuning["properties"] and "ablation" not in tuning["properties"]
    ablation = proposal_type("ablation", PARENT, "n3", None).model_json_schema()
    assert ablation["properties"]["ablation"]["anyOf"][0]["maxLength"] == 60
    assert "hyperparameters" not in ablation["properties"]
    assert Judgement.model_json_schema()["properties"]["reason"]["maxLength"] == 300


def test_the_code_prompt_fits_a_small_model_context() -> None:
    """A parent whose code and history outgrow a 6k context: the task, the idea and the contract
    stay whole, the parent's code is cut with a note, and the prompt fits."""
    idea = Idea(name="i", title="t", hypothesis="h", metrics=[MetricSpec(name="acc", primary=True)])
    parent = Node(stage="preliminary", kind="draft", idea="i", code="x = 1\n" * 8000, plan="p")
    history = [Node(stage="preliminary", kind="draft", idea="i", plan="q") for _ in range(800)]
    budget = PromptBudget(role="code", context_tokens=6000, max_tokens=768)
    rules = contract([MetricSpec(name="acc", primary=True)], 60.0, None, [])
    prompt = code_prompt(
        CodeRequest(idea, "preliminary", "improve", rules, parent=parent, history=history), budget
    )
    assert len(prompt) + len(SYSTEM) <= budget.chars
    assert prompt.endswith("Your task: " + OPERATOR_TASKS["improve"]) and rules in prompt
    assert "characters cut to fit the model's context" in prompt
