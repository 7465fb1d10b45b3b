"""The results contract has two readers that must agree: the host's `parse_results` and the
in-sandbox parser (stdlib only) whose small output the host validates again."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.contract import parse_results
from engine.node import MetricSpec
from search.agentic.operators import silva_parse_results as sandbox_parser

names = st.text(min_size=1, max_size=12)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
results = st.fixed_dictionaries(
    {"metrics": st.dictionaries(names, values, max_size=4)},
    optional={"artifacts": st.lists(st.text(max_size=8), max_size=3), "notes": st.text(max_size=20)},
)
documents = st.one_of(
    results, st.dictionaries(names, values, max_size=3), st.lists(st.integers(), max_size=2)
)


def _dump(doc: Any) -> bytes:
    # Python's json writes NaN/Infinity literals, as an experiment's json.dump would.
    return json.dumps(doc).encode()


def via_sandbox(raw: bytes, specs: list[MetricSpec]) -> tuple[dict[str, float] | None, str]:
    out = sandbox_parser.parse(raw)
    if "error" in out:
        return None, out["error"]
    values, parsed, problem = parse_results(json.dumps(out).encode(), specs)
    return ({v.name: v.value for v in values} if parsed else None), problem


def via_host(raw: bytes, specs: list[MetricSpec]) -> tuple[dict[str, float] | None, str]:
    values, parsed, problem = parse_results(raw, specs)
    return ({v.name: v.value for v in values} if parsed else None), problem


@settings(max_examples=300, deadline=None)
@given(doc=documents, declared=st.lists(names, max_size=2, unique=True))
def test_both_readers_accept_the_same_files_with_the_same_metrics(doc: Any, declared: list[str]) -> None:
    specs = [MetricSpec(name=n) for n in declared]
    raw = _dump(doc)
    host, host_problem = via_host(raw, specs)
    sandbox, sandbox_problem = via_sandbox(raw, specs)
    assert (host_problem == "") == (sandbox_problem == ""), (raw, host_problem, sandbox_problem)
    if host_problem == "":
        assert host == sandbox
        assert all(math.isfinite(v) for v in (host or {}).values())
