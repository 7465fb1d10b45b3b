"""One discovery attempt: figures read by a vision model; a broken result file is no evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from engine.llm import LLMConfig, build_gateway
from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider
from sandbox.base import Limits
from search.discovery.job import DiscoveryJob, DiscoveryOutcome

# The hypothesis code writes a 1x1 PNG by hand (no plotting library needed) and lists it.
FIGURE_CODE = """
import struct, zlib
import silva_stats as st
df = st.load()
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(b"\\x00\\x80")) + chunk(b"IEND", b""))
open("fig.png", "wb").write(png)
st.record(st.correlation(df, "x", "y"), expected_sign=1, figures=["fig.png"])
"""


def answer(code: str):  # a scripted provider's function
    def respond(call: ProviderCall) -> str:
        if call.role == "vision":
            assert call.messages[-1].images, "the figure reached the vision model"
            return "A rising cloud of points: the figure supports the claim."
        return json.dumps(
            {
                "statement": "x rises with y",
                "h0": "no association",
                "h1": "positive association",
                "variables": ["x", "y"],
                "expected_sign": 1,
                "code": code,
            }
        )

    return respond


def job(tmp_path: Path, code: str) -> DiscoveryJob:
    data = tmp_path / "train.parquet"
    pd.DataFrame({"x": range(40), "y": [2 * i + (i % 3) for i in range(40)]}).to_parquet(data)
    cfg = LLMConfig.model_validate(
        {
            "providers": {"offline": {"kind": "scripted"}},
            "models": {"m": {"provider": "offline", "model": "m", "capabilities": {"vision": True}}},
            "roles": {"code": {"model": "m"}, "vision": {"model": "m"}},
        }
    )
    llm = build_gateway(
        cfg, tmp_path, None, {}, providers={"offline": ScriptedProvider("offline", fn=answer(code))}
    )
    return DiscoveryJob(
        node_id="n0000",
        attempt=1,
        run_dir=tmp_path,
        kind="hypothesis",
        stage="hypotheses",
        idea="discovery",
        limits=Limits(wall_s=60, memory_mb=1024),
        sandbox="none",
        python=__import__("sys").executable,
        data_file=data,
        llm=llm.client(),
        prompt="p",
        vision=True,
    )


def test_figures_are_read_by_the_vision_model(tmp_path: Path) -> None:
    result = job(tmp_path, FIGURE_CODE).run(())
    out = result.outcome
    assert isinstance(out, DiscoveryOutcome) and result.status == "good"
    assert out.evidence is not None and out.evidence.effect > 0.9 and out.llm_calls == 2
    assert "supports the claim" in out.figure_reading
    assert result.code == FIGURE_CODE and any(a.endswith("fig.png") for a in result.artifacts)


def test_a_broken_result_file_is_no_evidence(tmp_path: Path) -> None:
    code = 'import json\njson.dump({"test": "t", "effect": 1e999}, open("silva_test.json", "w"))\n'
    result = job(tmp_path, code).run(())
    out = result.outcome
    assert isinstance(out, DiscoveryOutcome) and out.evidence is None and result.status == "buggy"
    assert "silva_test.json is invalid" in out.error


def test_a_hypothesis_relating_an_identifier_column_is_never_analysed(tmp_path: Path) -> None:
    j = job(tmp_path, "import silva_stats as st\nst.record(st.correlation(st.load(), 'x', 'y'))\n")
    j.identifiers = ["x"]
    result = j.run(())
    out = result.outcome
    assert isinstance(out, DiscoveryOutcome) and out.evidence is None and result.status == "buggy"
    assert "'x' identifies units (subjects, records), it is not a variable" in out.error
