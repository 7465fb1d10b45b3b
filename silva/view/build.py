"""Write RUN_DIR/view/: index.html (one self-contained page: styles, script and the forest table
inline, nothing fetched from the network), nodes/c<k>.js (the details of nodes k*64 to k*64+63,
loaded by the page when one of them is clicked; a script rather than JSON because a page opened
from disk may load scripts next to it but not fetch files), and forest.json + version.json for
the live refresh of `--serve`.

A rebuild rewrites only the chunks whose nodes changed since the last build, so a live view of
a large run costs little per refresh.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.journal import Journal
from engine.llm.ledger import CallRecord
from silva.config import RunConfig
from silva.cost import Span, attempt_spans, open_read_only
from silva.view.data import forest_data, node_details, node_revisions

VIEW_DIR = "view"
NODES_DIR = "nodes"
MANIFEST = "manifest.json"  # details chunk -> signature of what it holds
CHUNK = 64  # nodes per details file: few files to write at 10,000 nodes, little to load per click
BUILD_FORMAT = "3"  # bump when the details' shape changes: every node is rewritten
ASSETS = Path(__file__).parent / "assets"


@dataclass
class BuildResult:
    index: Path
    nodes: int
    written: int  # details chunks (re)written by this build


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: a metric that diverged shows as missing."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _json_for_script(value: Any) -> str:
    # Inside <script>, "</" would close the element early; "<\\/" is the same JSON string.
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except ValueError:  # rare: walk the value only when it holds a NaN or an infinity
        text = json.dumps(_finite(value), separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/")


def _atomic_write(path: Path, text: str) -> None:
    """Readers (the browser, the live server) never see half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def page(data_json: str) -> str:
    template = (ASSETS / "index.html").read_text(encoding="utf-8")
    css = (ASSETS / "view.css").read_text(encoding="utf-8")
    js = (ASSETS / "view.js").read_text(encoding="utf-8")
    # Split at the placeholders, in template order: inserted text (a node's plan may say
    # anything) is never searched for the next placeholder.
    head, rest = template.split("/*SILVA_CSS*/", 1)
    middle, rest = rest.split("/*SILVA_DATA*/", 1)
    before_js, tail = rest.split("/*SILVA_JS*/", 1)
    return head + css + middle + data_json + before_js + js + tail


def write_view(
    run_dir: Path, cfg: RunConfig, journal: Journal, records: list[CallRecord], out: Path | None = None
) -> BuildResult:
    """Into `out` (RUN_DIR/view by default). A first build goes to a hidden sibling that is renamed
    into place when complete: a build that fails leaves no partial view behind."""
    out = out or run_dir / VIEW_DIR
    if out.is_dir():  # a rebuild (the live view): every file is replaced whole
        return _write_into(out, run_dir, cfg, journal, records)
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        result = _write_into(staging, run_dir, cfg, journal, records)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BuildResult(index=out / result.index.name, nodes=result.nodes, written=result.written)


def _write_into(
    out: Path, run_dir: Path, cfg: RunConfig, journal: Journal, records: list[CallRecord]
) -> BuildResult:
    nodes_dir = out / NODES_DIR
    nodes_dir.mkdir(parents=True, exist_ok=True)
    revisions = node_revisions(journal, records)
    data = forest_data(run_dir, cfg, journal, records, revisions, CHUNK)
    dumped = data.model_dump(mode="json")
    written = _write_details(journal, records, revisions, dumped["decisions"], nodes_dir)
    data_json = _json_for_script(dumped)
    _atomic_write(out / "forest.json", data_json)
    _atomic_write(out / "index.html", page(data_json))
    _atomic_write(out / "version.json", json.dumps({"version": data.version}))
    return BuildResult(index=out / "index.html", nodes=len(journal.nodes), written=written)


def _write_details(
    journal: Journal,
    records: list[CallRecord],
    revisions: dict[str, str],
    decisions: list[dict[str, Any]],
    nodes_dir: Path,
) -> int:
    """Write the details chunks whose nodes changed; how many chunks were written."""
    manifest_path = nodes_dir / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (FileNotFoundError, ValueError):
        manifest = {}
    if manifest.get("format") != BUILD_FORMAT:
        manifest = {"format": BUILD_FORMAT, "chunks": {}}
    done: dict[str, str] = manifest["chunks"]
    # A node's details show its children and the decisions naming it: those change its page too.
    children: dict[str, list[str]] = defaultdict(list)
    for n in journal:
        if n.parent_id:
            children[n.parent_id].append(n.id)
    named: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in decisions:
        for key in ("node", "aggregate", "root"):
            if d.get(key):
                named[d[key]].append(d)
    ids = list(journal.nodes)
    tokens = {nid: f"{revisions[nid]}/{len(children[nid])}/{len(named[nid])}" for nid in ids}
    stale: dict[int, str] = {}
    for c in range(0, len(ids), CHUNK):
        signature = hashlib.sha1(" ".join(tokens[nid] for nid in ids[c : c + CHUNK]).encode()).hexdigest()
        if done.get(str(c // CHUNK)) != signature or not (nodes_dir / f"c{c // CHUNK}.js").is_file():
            stale[c // CHUNK] = signature
    if not stale:
        return 0
    wanted = {nid for k in stale for nid in ids[k * CHUNK : (k + 1) * CHUNK]}
    spans: dict[str, list[Span]] = defaultdict(list)
    for s in attempt_spans(journal.log.events):
        if s.node_id in wanted:
            spans[s.node_id].append(s)
    calls: dict[str, list[CallRecord]] = defaultdict(list)
    for r in records:
        if r.node_id in wanted:
            calls[r.node_id].append(r)
    for k, signature in stale.items():
        chunk = {
            nid: {
                **node_details(
                    journal, journal.nodes[nid], children[nid], spans[nid], calls[nid], named[nid]
                ),
                "rev": revisions[nid],
            }
            for nid in ids[k * CHUNK : (k + 1) * CHUNK]
        }
        _atomic_write(nodes_dir / f"c{k}.js", f"silvaNodes({k},{_json_for_script(chunk)});\n")
        done[str(k)] = signature
    _atomic_write(manifest_path, json.dumps(manifest))
    return len(stale)


def build_view(run_dir: Path, out: Path | None = None) -> BuildResult:
    """Read the run (read-only: works while it runs) and write its view into `out`."""
    cfg, journal, records = open_read_only(run_dir)
    return write_view(run_dir, cfg, journal, records, out)
