"""The view's claims panel states the claim ledger the writer writes (ledger.json): the same claims
and verdicts, a non-significant difference as "no detectable difference" (never "outperformed"),
a group of one run without an sd, and a plain sentence where there is nothing to compare.
The seed values are the writer's ledger test's (tests/writeup/test_ledger.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.claims import load_ledger
from engine.eventlog import EVENTS_FILE
from silva.cost import open_read_only
from silva.view.build import build_view
from silva.view.claims import NO_GROUPS, NO_STAGE, UNREADABLE, IdeaClaims, idea_claims
from tests.view.browser import browser_page, not_blank
from tests.view.synth import make_run
from tests.writeup.test_ledger import BASE, METHOD, ONE, TUNED
from writeup.config import WriteupConfig
from writeup.paper import open_paper


def _seeds(g: dict[str, list[float]]) -> dict[str, list[float]]:
    # The synthetic run selects on `score`; its held-out twin is `test_score`.
    return {"score": g["val_accuracy"], "test_score": g["test_accuracy"]}


AGGREGATES = {
    "preliminary": {"baseline (best of preliminary)": _seeds(BASE)},
    "hyperparameter": {
        "tuned baseline (best of hyperparameter)": _seeds(TUNED),
        "baseline (best of preliminary)": _seeds(BASE),
    },
    "agenda": {
        "method (best of agenda)": _seeds(METHOD),
        "tuned baseline (best of hyperparameter)": _seeds(TUNED),
    },
    "ablation": {
        "ablation: no_method (best of ablation)": _seeds(TUNED),
        "method (best of agenda)": _seeds(METHOD),
        "ablation: no_scaling": _seeds(ONE),
    },
}


def _panel(run_dir: Path, ideas: list[str]) -> list[IdeaClaims]:
    cfg, journal, _ = open_read_only(run_dir)
    return idea_claims(run_dir, cfg, journal, ideas)


def test_panel_states_the_writers_ledger(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=4, plots=False, aggregates=AGGREGATES)
    paper = open_paper(run_dir, "alpha", WriteupConfig(), sandbox="none")  # writes ledger.json
    ledger = load_ledger(paper.dir)
    assert ledger is not None and len(ledger.claims) >= 8
    (panel,) = _panel(run_dir, ["alpha"])
    assert {c.id: c.verdict for c in panel.claims} == {c.id: c.verdict for c in ledger.claims}
    main = panel.claims[0]
    assert main.headline and main.id == ledger.headline_id

    # The headline: method against the tuned baseline on the selection metric, said so, and not
    # significant (Welch p > 0.5): "no detectable difference", never "outperformed".
    assert (main.subject.label, main.reference.label) == (
        "method (best of agenda)",
        "tuned baseline (best of hyperparameter)",
    )
    # A reader meets them by name; the label stays beside it, to find the node.
    assert (main.subject.name, main.reference.name) == ("bonus", "tuned baseline")
    assert "the tuned baseline" in main.sentence and "(best of" not in main.sentence
    assert main.role == "selection" and "selection metric score" in panel.note
    assert "search selected on" in panel.caveats
    assert main.verdict == "no detectable difference" and "no detectable difference" in main.sentence
    for word in ("outperform", "better than", "significantly"):
        assert word not in main.sentence
    assert main.p != "-" and float(main.p) > 0.5 and main.test == "Welch's t-test"
    assert main.statistic.startswith("t = ") and ", df = " in main.statistic
    assert main.effect.startswith("g = ") and "[" in main.effect and main.budgets == "matched"
    assert main.subject.value.count(" ± ") == 1 and main.subject.n == 3

    # On the held-out metric the same groups differ: the ledger's "worse", in the writer's words.
    held = next(c for c in panel.claims if c.stage == "agenda" and c.metric == "test_score")
    assert held.verdict == "worse" and held.role == "test"
    assert "was significantly worse than" in held.sentence and "(held-out test)" in held.sentence

    # A group of one run: its value alone, no sd, never tested.
    single = next(c for c in panel.claims if c.reference.label == "ablation: no_scaling")
    assert single.reference.n == 1 and single.reference.value.endswith("(one run)")
    assert "±" not in single.reference.value and single.verdict == "untested"
    assert single.p == "-" and "not tested" in single.test and "a group of one run" in single.sentence
    repeat = next(c for c in panel.claims if c.subject.label.startswith("ablation: no_method"))
    assert repeat.repeats == ledger.headline_id


def test_panel_says_plainly_when_there_is_nothing_to_compare(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=3, plots=False)  # no aggregate.json
    no_groups, no_stage = _panel(run_dir, ["alpha", "gamma"])
    assert (no_groups.note, no_groups.claims) == (NO_GROUPS, [])
    assert (no_stage.idea, no_stage.note, no_stage.claims) == ("gamma", NO_STAGE, [])


def test_an_idea_file_broken_since_the_run_leaves_the_page_and_says_why(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=3, plots=False, aggregates=AGGREGATES)
    broken = tmp_path / "idea.yaml"
    broken.write_text(yaml.safe_dump({"name": "alpha", "title": 3}))  # edited into an invalid idea
    events = run_dir / EVENTS_FILE
    first, rest = events.read_text().split("\n", 1)
    start = json.loads(first)
    start["config"]["idea"] = str(broken)
    events.write_text(json.dumps(start) + "\n" + rest)
    (panel,) = _panel(run_dir, ["alpha"])
    assert panel.note.startswith(UNREADABLE) and "title" in panel.note and panel.claims == []
    assert build_view(run_dir).index.is_file()  # the forest is still drawn


@pytest.mark.slow
def test_claims_panel_renders(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha", "beta"), search_nodes=4, aggregates=AGGREGATES)
    index = build_view(run_dir).index
    with browser_page() as w:
        page = w.page
        page.goto(index.as_uri())
        page.wait_for_selector("body[data-ready='1']", state="attached")
        assert page.locator("#claims .idea-claims").count() == 2
        headline = page.inner_text("#claims .idea-claims[data-idea='alpha'] .headline")
        assert headline.startswith("no detectable difference") and "outperform" not in headline
        text = page.inner_text("#claims")
        assert "Welch's t-test" in text and "(one run)" in text and "held-out test metric" in text
        assert page.locator("#claims .verdict.worse").count() > 0
        page.locator("#claims").scroll_into_view_if_needed()
        shot = tmp_path / "claims.png"
        page.screenshot(path=str(shot), full_page=True)
        w.check()
    not_blank(shot)
