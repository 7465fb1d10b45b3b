"""Discovery integrity on a real run: an identical hypothesis is tested once and answered from the
first; a stratified re-analysis is linked to the claim it checks and, finding nothing within
strata, demotes it to `explained` in the claim store, findings.md and the findings paper."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import ScriptedProvider, last_user_text
from search.discovery.claims import ClaimStore
from silva import lifecycle
from silva.cli.main import main
from silva.config import load_config

HEAD = "import silva_stats as st\ndf = st.load()\n"
PROPOSALS = {
    1: (["x", "y"], 1, HEAD + 'st.record(st.correlation(df, "x", "y"), expected_sign=1)\n'),
    # The same test with other layout, a comment and the variables in another order.
    2: (
        ["y", "x"],
        1,
        HEAD + '# x and y again\n\nst.record( st.correlation(df, "x",  "y"),  expected_sign=1 )\n',
    ),
    # A confound check that does not name its claim: linked by its two variables.
    3: (["x", "y", "z"], 0, HEAD + 'st.record(st.stratified(df, "y", "x", "z"), expected_sign=0)\n'),
    4: (["w", "x"], 0, HEAD + 'st.record(st.correlation(df, "w", "x"), expected_sign=0)\n'),
}


def respond(call: ProviderCall) -> str:
    k = int(re.search(r"Proposal #(\d+)", last_user_text(call.messages)).group(1))  # type: ignore[union-attr]
    variables, sign, code = PROPOSALS[k]
    return json.dumps(
        {
            "statement": f"claim {k}",
            "h0": "no association",
            "h1": "an association",
            "variables": variables,
            "expected_sign": sign,
            "code": code,
        }
    )


@pytest.mark.e2e
def test_duplicate_tested_once_and_confounded_claim_explained(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 600
    z = rng.integers(0, 3, n)  # x and y both follow z, and nothing else
    table = pd.DataFrame(
        {"x": z + rng.normal(0, 0.7, n), "y": z + rng.normal(0, 0.7, n), "z": z, "w": rng.normal(size=n)}
    )
    table.to_csv(tmp_path / "t.csv", index=False)
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(
        yaml.safe_dump(
            {
                "name": "integrity",
                "output_dir": str(tmp_path / "runs"),
                "seed": 1,
                "discovery": {"data": str(tmp_path / "t.csv"), "max_hypotheses": 4},
                "budgets": {"wall_clock_s": 300, "node_timeout_s": 60},
                "executor": {"kind": "inprocess", "max_in_flight": 1},
                "sandbox": "none",
                "llm": {
                    "providers": {"offline": {"kind": "scripted"}},
                    "models": {"m": {"provider": "offline", "model": "m"}},
                    "roles": {"code": {"model": "m"}, "feedback": {"model": "m"}},
                },
            }
        )
    )
    provider = ScriptedProvider("offline", fn=respond)
    cfg = load_config(cfg_path)
    run_dir, journal = lifecycle.create_run(cfg)
    assert lifecycle.execute(cfg, journal, providers={"offline": provider}).status == "finished"
    claims = {c.statement: c for c in ClaimStore(run_dir).load()}
    first, dup, check = claims["claim 1"], claims["claim 2"], claims["claim 3"]

    # Tested once: the duplicate's code never ran, it has no held-out read, it is answered by claim 1.
    assert dup.status == "duplicate" and dup.log_p_train is None and dup.heldout_uses == 0
    assert f"identical to {first.id}" in dup.reason and dup.reason.endswith(f"now {first.status}")
    assert [n.parent_id for n in journal if n.kind == "heldout"] == [first.id]
    prompt3 = next(c for c in provider.calls if "Proposal #3" in last_user_text(c.messages))
    assert f"identical to {first.id}" in last_user_text(prompt3.messages)

    # Linked and demoted: claim 1 passed both splits, then its stratified check found nothing.
    assert check.parent == first.id and check.status == "rejected"
    assert first.status == "explained" and first.reason.startswith("explained by z:")
    assert first.log_p_heldout is not None and first.effect_train is not None and first.effect_train > 0.4
    findings = (run_dir / "discovery" / "findings.md").read_text()
    demoted = findings.split("## Demoted claims")[1].split("##")[0]
    assert first.id in demoted and "explained by z" in demoted
    assert first.id not in findings.split("## Accepted claims")[1].split("##")[0]
    journal.log.close()

    # The findings paper (`silva writeup` on a discovery run) says the same.
    assert main(["writeup", str(run_dir)]) == 0
    paper = run_dir / "paper" / "findings"
    tex = (paper / "paper.tex").read_text()
    assert (paper / "paper.pdf").stat().st_size > 1000
    demoted_tex = tex.split("Demoted claims")[1].split("section")[0]
    assert first.id in demoted_tex and "explained by z" in demoted_tex
    assert "0 claim(s) stand accepted" in tex and "1 further claim(s) were accepted, then explained" in tex
    assert "Two-split gate" in tex and "No negative control ran" in tex
