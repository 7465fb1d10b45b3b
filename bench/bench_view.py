"""The run view at 10,000 nodes: build time (first and with nothing changed), page size, and in
headless Chromium the time to load and draw the forest, open a node's details, and redraw.

Writes bench/results/view.json. Targets: page drawn in <= 5 s, a click's details in <= 1 s.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from silva.view.build import build_view  # noqa: E402
from tests.view.synth import make_run  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def browser(index: Path, probe: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1500, "height": 1000})
        t = time.perf_counter()
        page.goto(index.as_uri())
        page.wait_for_selector("body[data-ready='1']", state="attached")
        load = time.perf_counter() - t
        drawn = page.locator("#forest [data-i]").count()
        click = page.evaluate(
            """(n) => new Promise(done => {
                 const t = performance.now();
                 document.querySelector(`[data-i="${n}"]`)
                   .dispatchEvent(new MouseEvent("click", {bubbles: true}));
                 const wait = () => document.querySelector("#details-body h4")
                   ? done(performance.now() - t) : setTimeout(wait, 5);
                 wait();
               })""",
            probe,
        )
        redraw = page.evaluate(
            "() => { const t = performance.now(); document.getElementById('zoom-in').click(); return "
            "performance.now() - t; }"
        )
        b.close()
    return {
        "load_and_draw_s": round(load, 3),
        "nodes_drawn": drawn,
        "click_to_details_ms": round(click, 1),
        "redraw_ms": round(redraw, 1),
    }


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="silva-bench-view-"))
    try:
        run_dir = make_run(tmp, ideas=("alpha", "beta"), search_nodes=1250, plots=False)  # 2 x 4 x 1253 nodes
        t = time.perf_counter()
        first = build_view(run_dir)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        again = build_view(run_dir)
        rebuild_s = time.perf_counter() - t
        index = run_dir / "view" / "index.html"
        result = {
            "nodes": first.nodes,
            "build_s": round(build_s, 2),
            "rebuild_unchanged_s": round(rebuild_s, 2),
            "details_chunks": first.written,
            "chunks_rewritten_unchanged": again.written,
            "index_html_kb": round(index.stat().st_size / 1024),
            **browser(index, first.nodes // 2),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results" / "view.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
