"""The HTML view in a real headless Chromium: a finished forest opened from disk, and a running
run served with live refresh. Screenshots are kept under the test's tmp directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from silva.cli.main import main
from silva.view.build import build_view
from silva.view.serve import ViewServer
from tests.view.browser import browser_page, chromium, not_blank
from tests.view.synth import make_run


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module's pages (each test still gets its own page)."""
    with chromium() as b:
        yield b


def _count(page: object, selector: str) -> int:
    return page.locator(selector).count()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_finished_forest_page(tmp_path: Path, browser: Any) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha", "beta"), search_nodes=5)
    assert main(["view", str(run_dir)]) == 0
    index = run_dir / "view" / "index.html"
    html = index.read_text()
    # Self-contained: no network reference, no external script or stylesheet.
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    assert "<script src" not in html and '<link rel="stylesheet"' not in html
    forest = json.loads((run_dir / "view" / "forest.json").read_text())
    total = len(forest["nodes"]["id"])

    with browser_page(browser) as w:
        page = w.page
        page.goto(index.as_uri())
        page.wait_for_selector("body[data-ready='1']", state="attached")
        assert _count(page, ".idea") == 2  # one tree per idea
        assert _count(page, "[data-i]") == total  # every node drawn
        assert _count(page, ".node.buggy") > 0 and _count(page, ".node.good") > 0
        assert _count(page, "#forest .ring:not(.heldout)") == len(forest["decisions"])  # each stage's best
        assert "stage" in page.inner_text("#legend")
        assert page.locator(".band-label", has_text="hyperparameter").count() == 2  # grouped by stage
        decisions = page.inner_text("#decisions")
        assert "best of" in decisions and "n00" in decisions
        assert "by role" in page.inner_text("#spend") and "code" in page.inner_text("#spend")
        # No aggregate.json in this run: the claims panel says there is nothing to compare yet.
        assert page.inner_text("#claims").count("no ledger-able comparison yet") == 2

        # A good search node with a plot: every section of its details opens on click.
        n = next(
            i
            for i, (k, st) in enumerate(zip(forest["nodes"]["k"], forest["nodes"]["st"]))
            if forest["kinds"][k] == "hyperparameter" and forest["statuses"][st] == "good"
        )
        page.click(f"[data-i='{n}']")
        page.wait_for_selector("#details-body pre.code")
        body = page.inner_text("#details-body")
        for section in (
            "PLAN",
            "METRICS",
            "JUDGEMENT",
            "PLOT CRITIQUE",
            "PLOTS",
            "CODE",
            "DIFF AGAINST",
            "COST",
            "TIMINGS",
            "WORKER AND ATTEMPTS",
            "EXECUTION",
        ):
            assert section in body.upper(), section
        assert forest["nodes"]["id"][n] in body
        assert _count(page, "#details-body pre.code span.k") > 0  # highlighted keywords
        assert _count(page, "#details-body pre.diff span.da") > 0  # the diff's added lines
        page.wait_for_function("document.querySelector('#details-body .plots img').naturalWidth > 0")
        shot = tmp_path / "finished.png"
        page.screenshot(path=str(shot), full_page=True)
        w.check()
    colours = not_blank(shot)
    assert colours["good"] > 20 and colours["buggy"] > 5, colours


@pytest.mark.slow
def test_running_run_served_live(tmp_path: Path, browser: Any) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=4, running=2)
    with ViewServer(run_dir, interval_s=0.2) as server, browser_page(browser) as w:
        page = w.page
        assert server.url.startswith("http://127.0.0.1:")
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']", state="attached")
        assert page.is_visible("#live")
        assert _count(page, "#forest .node.running") == 2
        before = _count(page, "[data-i]")
        running_index = page.get_attribute("#forest .node.running", "data-i")
        page.click("#forest .node.running")
        page.wait_for_selector("#details-body h4")
        assert "not started" not in page.inner_text("#details-body")  # an attempt is under way
        # The run goes on: a running node finishes and a new node appears.
        forest = json.loads((run_dir / "view" / "forest.json").read_text())
        node_id = forest["nodes"]["id"][int(running_index)]
        events = (run_dir / "events.jsonl").read_text().splitlines()
        last = json.loads(events[-1])
        created = next(
            json.loads(e)
            for e in events
            if json.loads(e)["type"] == "node_created" and json.loads(e)["node"]["id"] == node_id
        )
        new_node = {**created["node"], "id": "n09999", "parent_id": node_id, "status": "pending"}
        with (run_dir / "events.jsonl").open("a") as fh:
            for i, (kind, data) in enumerate(
                (
                    (
                        "attempt_finished",
                        {
                            "node_id": node_id,
                            "attempt": 1,
                            "result": {
                                "status": "good",
                                "metrics": [{"name": "score", "value": 0.99, "direction": "maximize"}],
                                "worker": "host9:1",
                                "started_at": last["ts"],
                                "finished_at": last["ts"] + 1,
                            },
                        },
                    ),
                    ("node_created", {"node": new_node}),
                )
            ):
                fh.write(
                    json.dumps({"seq": last["seq"] + 1 + i, "ts": last["ts"] + 1 + i, "type": kind, **data})
                    + "\n"
                )
        page.wait_for_function(
            f"document.querySelectorAll('[data-i]').length === {before + 1}", timeout=15000
        )
        assert _count(page, "#forest .node.running") == 1
        # The open details followed the change: the node is now good, with its new metric.
        page.wait_for_function(
            "document.querySelector('#details-body').innerText.includes('0.99')", timeout=15000
        )
        shot = tmp_path / "running.png"
        page.screenshot(path=str(shot), full_page=True)
        w.check()
    not_blank(shot)


def test_view_rebuilds_only_changed_chunks(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ideas=("alpha",), search_nodes=4, plots=False)
    first = build_view(run_dir)
    assert first.written >= 1 and first.nodes > 0
    assert build_view(run_dir).written == 0  # nothing changed: nothing rewritten


def test_view_errors(tmp_path: Path, capsys: object) -> None:
    assert main(["view", str(tmp_path)]) == 2
    assert "not a Silva run directory" in capsys.readouterr().err  # type: ignore[attr-defined]
