"""A journal subscriber that sends a run to an experiment tracker: it reads events.jsonl from its
cursor, turns each event into tracker records, and passes an event only once all of its records
are sent. It never writes the journal and holds no LLM key (docs/tracking.md)."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from engine import blobs
from engine import events as ev
from engine.claims import LEDGER_FILE
from engine.contract import RESULTS_FILE
from engine.errors import ConfigError
from engine.eventlog import EVENTS_FILE, parse_line
from engine.node import AttemptResult, Node
from engine.summary import DOCUMENT_STAGES
from silva.config import load_config
from silva.tracking.base import Backend, RunEnd
from silva.tracking.cursor import Cursor, NodeSeen
from silva.tracking.summary import run_totals

MAX_VALUE = 5000  # characters of a tag or parameter value (trackers cap them)
READ_CHUNK = 1 << 20


def short(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def flat(data: Mapping[str, Any], prefix: str = "", depth: int = 2) -> dict[str, str]:
    """Scalars of a nested mapping as `a.b` parameters (None left out)."""
    out: dict[str, str] = {}
    for k, v in data.items():
        if isinstance(v, Mapping) and depth > 1:
            out.update(flat(v, f"{prefix}{k}.", depth - 1))
        elif v is not None and v != {} and v != []:
            out[f"{prefix}{k}"] = short(v)
    return out


def mode_of_run(run_dir: Path) -> str:
    """The search mode, as the run's config says (a run's first event does not name it)."""
    try:
        return load_config(run_dir / "config.yaml", check_files=False).mode
    except ConfigError:
        return "unknown (config.yaml unreadable)"


class Follower:
    """Sends the events after its cursor; `step` raises whatever the backend raised, leaving the
    cursor before the event that failed, so calling it again retries that event."""

    def __init__(self, run_dir: Path, backend: Backend, cursor: Cursor, cursor_path: Path) -> None:
        self.run_dir, self.backend, self.cursor, self.cursor_path = run_dir, backend, cursor, cursor_path
        self.log_path = run_dir / EVENTS_FILE
        # An earlier follower may have been killed inside the next event, the first included:
        # check before sending it.
        self.recovering = True
        blobs.register(run_dir)

    def behind(self) -> int:
        """Bytes of the journal not yet sent."""
        try:
            return max(0, self.log_path.stat().st_size - self.cursor.offset)
        except FileNotFoundError:
            return 0

    def step(self, sends: int | None = None) -> int:
        """Send every complete event after the cursor (or up to `sends` events that have records);
        then the run's totals when it stopped or finished since they were last sent. Returns the
        number of events passed."""
        passed = 0
        for end, data in self._lines():
            event = ev.parse(data)
            try:
                sent = self._handle(event)
            except Exception:
                # A record the tracker did not acknowledge may have landed all the same (a create
                # that timed out after the server did it): the next try looks before it sends.
                self.recovering = True
                raise
            self.cursor.offset, self.cursor.seq = end, event.seq
            passed += 1
            if sent:
                self.cursor.save(self.cursor_path)
                self.recovering = False
                if sends is not None and (sends := sends - 1) == 0:
                    return passed
        due = self.cursor.stopped > self.cursor.summarized
        if due:
            self._summarize(self.cursor.stopped)
            self.cursor.summarized = self.cursor.stopped
        if passed or due:
            self.cursor.save(self.cursor_path)
        return passed

    def _lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset after the line, event) of each complete line after the cursor."""
        try:
            f = self.log_path.open("rb")
        except FileNotFoundError:
            return
        with f:
            pos = self.cursor.offset
            f.seek(pos)
            rest = b""
            while chunk := f.read(READ_CHUNK):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()  # a line still being written waits for the next step
                for raw in lines:
                    pos += len(raw) + 1
                    data, _ = parse_line(raw)
                    if data is not None:
                        yield pos, data

    # -- events to records ------------------------------------------------------------------
    def _handle(self, e: ev.Event) -> bool:
        """Send the records of one event; False when it has none."""
        if isinstance(e, ev.RunStarted):
            self._run_started(e)
        elif isinstance(e, ev.NodeCreated):
            self._node_created(e.node)
        elif isinstance(e, ev.AttemptFinished):
            return self._attempt_finished(e.node_id, e.result)
        elif isinstance(e, ev.NodeDiscarded) and self._node_run(e.node_id):
            run = self._node_run(e.node_id)
            self.backend.set_tags(run, {"silva.status": "discarded", "silva.reason": short(e.reason)})
            self.backend.end_run(run, "KILLED")
        elif isinstance(e, ev.StageBest):
            self._stage_best(e)
        elif isinstance(e, ev.IdeaStopped):
            self.backend.set_tags(self._idea_run(e.idea), {"silva.stopped": short(e.reason)})
        elif isinstance(e, ev.RunStopped | ev.RunFinished):
            self.cursor.stopped, self.cursor.finished = e.seq, isinstance(e, ev.RunFinished)
            tag = "silva.finished" if self.cursor.finished else "silva.stopped"
            self.backend.set_tags(self._parent(), {tag: short(e.reason)})
        else:
            return False
        return True

    def _create(self, key: str, level: Any, name: str, parent: str | None, tags: dict[str, str]) -> str:
        run = self.backend.create_run(key, level, name, parent, tags, recover=self.recovering)
        self.cursor.runs[key] = run
        return run

    def _parent(self) -> str:
        run = self.cursor.runs.get("run")
        if run is None:  # a journal without run_started (damaged, repaired): a parent all the same
            run = self._create("run", "run", self.run_dir.name, None, {"silva.run_dir": str(self.run_dir)})
        return run

    def _idea_run(self, idea: str) -> str:
        key = f"idea:{idea}"
        run = self.cursor.runs.get(key)
        if run is None:
            run = self._create(key, "idea", f"idea {idea}", self._parent(), {"silva.idea": idea})
        return run

    def _node_run(self, node_id: str) -> str:
        return self.cursor.runs.get(f"node:{node_id}", "")

    def _run_started(self, e: ev.RunStarted) -> None:
        tags = {
            "silva.run_dir": str(self.run_dir.resolve()),
            "silva.mode": e.mode or mode_of_run(self.run_dir),
            "silva.event_format": str(e.format),
            "silva.stages": ",".join(e.stages),
            "silva.metrics": ",".join(f"{m.name} ({m.direction})" for m in e.metrics),
        }
        if "run" not in self.cursor.runs:
            self._create("run", "run", self.run_dir.name, None, tags)
        parent = self._parent()
        self.backend.log_params(parent, flat(e.config))
        config = self.run_dir / "config.yaml"
        if config.is_file():
            self.backend.log_file(parent, config, "")

    def _node_created(self, node: Node) -> None:
        phase = node.stage if node.stage in DOCUMENT_STAGES else ""  # its files go on the idea
        self.cursor.nodes[node.id] = NodeSeen(order=len(self.cursor.nodes), idea=node.idea, phase=phase)
        idea_run = self._idea_run(node.idea)
        if phase:
            return
        tags = {
            "silva.node_id": node.id,
            "silva.idea": node.idea,
            "silva.stage": node.stage,
            "silva.kind": node.kind,
            "silva.status": "pending",
            "silva.parent_node": node.parent_id or "",
        }
        if node.origin.label:
            tags["silva.label"] = short(node.origin.label)
        run = self._create(f"node:{node.id}", "node", f"{node.id} {node.kind}", idea_run, tags)
        params = flat(node.params)
        if node.seed is not None:
            params["seed"] = str(node.seed)
        if params:
            self.backend.log_params(run, params)
        if node.code:
            self._send_text(run, node.code, "code.py", "code")

    def _attempt_finished(self, node_id: str, result: AttemptResult) -> bool:
        seen = self.cursor.nodes.get(node_id)
        if seen is None:
            return False
        if seen.phase:
            self._phase_files(self._idea_run(seen.idea), seen.phase, result)
            return True
        run = self._node_run(node_id)
        values = {m.name: m.value for m in result.metrics if math.isfinite(m.value)}
        if values:
            self.backend.log_metrics(run, values, seen.order, recover=self.recovering)
        tags: dict[str, str] = {"silva.status": result.status}
        if result.status == "buggy":
            tags["silva.buggy_reason"] = short(result.reason)
        elif result.reason:
            tags["silva.note"] = short(result.reason)
        self.backend.set_tags(run, tags)
        self._node_files(run, result)
        end: RunEnd = "FINISHED" if result.status == "good" else "FAILED"
        self.backend.end_run(run, end)
        return True

    def _node_files(self, run: str, result: AttemptResult) -> None:
        """Its code, its results.json and the files it listed (plots)."""
        workspace = self.run_dir / result.workspace if result.workspace else None
        if result.code:
            self._send_text(run, result.code, "code.py", "code")
        elif workspace is not None and workspace.is_dir():  # a template's script, run as it is
            for script in sorted(workspace.glob("*.py")):
                self.backend.log_file(run, script, "code")
        files = self._files(result.artifacts)
        if workspace is not None and (workspace / RESULTS_FILE).is_file():
            files.append(workspace / RESULTS_FILE)
        for path in dict.fromkeys(files):
            self.backend.log_file(run, path, "files")

    def _phase_files(self, idea_run: str, phase: str, result: AttemptResult) -> None:
        """The paper, the reviews and the claim ledger go on the idea's run."""
        files = self._files(result.artifacts)
        ledger = self.run_dir / result.workspace / LEDGER_FILE
        if result.workspace and ledger.is_file() and ledger not in files:
            files.append(ledger)
        for path in files:
            self.backend.log_file(idea_run, path, phase)
        self.backend.set_tags(idea_run, {f"silva.{phase}": short(result.reason)})

    def _files(self, artifacts: list[str]) -> list[Path]:
        """The files an attempt listed (a folder's files one level down) that exist."""
        out: list[Path] = []
        for rel in artifacts:
            path = self.run_dir / rel
            if path.is_file():
                out.append(path)
            elif path.is_dir():
                out += sorted(p for p in path.iterdir() if p.is_file())
        return out

    def _send_text(self, run: str, text: str, name: str, folder: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_text(text)
            self.backend.log_file(run, path, folder)

    def _stage_best(self, e: ev.StageBest) -> None:
        self.backend.set_tags(self._idea_run(e.idea), {f"silva.best.{e.stage}": e.node_id or "none"})
        if e.node_id and self._node_run(e.node_id):
            self.backend.set_tags(self._node_run(e.node_id), {"silva.best_of_stage": e.stage})

    def _summarize(self, seq: int) -> None:
        """LLM spend by role, utilization and budgets on the parent; at the finish, every run ends."""
        parent = self._parent()
        self.backend.log_metrics(parent, run_totals(self.run_dir), seq, recover=True)
        if not self.cursor.finished:
            return
        for key, run in self.cursor.runs.items():
            if key.startswith("idea:"):
                self.backend.end_run(run, "FINISHED")
        self.backend.end_run(parent, "FINISHED")
