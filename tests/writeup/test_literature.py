"""The literature client: Semantic Scholar against a fake server on 127.0.0.1, the user's .bib,
BibTeX from records, preflight refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from tests.writeup.fake_s2 import fake_s2
from writeup.config import LiteratureConfig, WriteupConfig
from writeup.literature import LiteratureError, bibtex, cite_key, open_literature
from writeup.preflight import preflight


def test_semantic_scholar_search_retries_429_and_sends_key() -> None:
    with fake_s2(fail_first=2) as (url, server):
        lit = open_literature(
            LiteratureConfig(base_url=url, api_key_env="S2_KEY", requests_per_s=100),
            {"S2_KEY": "k-123"},
            backoff_s=0.01,
        )
        papers = lit.search("random features", limit=2)
    assert [p.id for p in papers] == ["s2:a1b2", "s2:c3d4"]
    assert papers[0].authors == ["Ali Rahimi", "Benjamin Recht"] and papers[0].kind == "inproceedings"
    assert len(server.requests) == 3 and server.requests[-1]["query"] == ["random features"]
    assert server.headers[-1].get("x-api-key") == "k-123"
    entry = bibtex(papers[1])
    assert (
        entry.startswith("@inproceedings{li2006very,")
        and "Ping Li and Trevor J. Hastie and Kenneth W. Church" in entry
    )


def test_semantic_scholar_gives_up_after_bounded_retries() -> None:
    with fake_s2(fail_first=100) as (url, server):
        lit = open_literature(
            LiteratureConfig(base_url=url, max_retries=2, requests_per_s=100), {}, backoff_s=0.01
        )
        with pytest.raises(LiteratureError, match="429"):
            lit.search("anything")
    assert len(server.requests) == 3


def test_offline_bib_keeps_user_keys(tmp_path: Path) -> None:
    bib = tmp_path / "refs.bib"
    bib.write_text(
        "@article{mykey, title={Label Noise and {Small-Loss} Filtering}, author={Doe, Jane and Roe, R.}, "
        "year={2019}, journal={JMLR}}\n@misc{other, title={Unrelated Topic}, year={2001}}\n"
    )
    lit = open_literature(LiteratureConfig(provider="offline_bib", bib_file=bib))
    papers = lit.search("small-loss filtering under label noise", 5)
    assert [cite_key(p) for p in papers] == ["mykey"]
    assert bibtex(papers[0]).startswith("@article{mykey,")


@pytest.mark.slow
def test_preflight_refuses_unreachable_literature_before_any_spend() -> None:
    cfg = WriteupConfig(
        literature=LiteratureConfig(base_url="http://127.0.0.1:9", max_retries=0, timeout_s=2)
    )
    with pytest.raises(ConfigError, match="semantic_scholar"):
        preflight(cfg, sandbox="none", llm_writer=True)
    preflight(
        cfg.model_copy(update={"offline": True}), sandbox="none", llm_writer=False
    )  # offline needs no client
