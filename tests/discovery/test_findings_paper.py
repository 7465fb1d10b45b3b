"""The findings paper of a discovery run fits its page: every table spans the text width, so no
number runs off the edge, signs print as minus signs, and a repeated proposal is not counted as
a tested hypothesis."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from search.discovery.claims import Claim, ClaimStore
from writeup.findings import render, write_findings_paper

needs_tex = pytest.mark.skipif(
    shutil.which("latexmk") is None or shutil.which("pdftotext") is None,
    reason="TeX Live or poppler-utils missing: make system-deps",
)

LONG = (
    "Resting heart rate falls as weekly exercise hours rise, after adjusting for age and smoking "
    "status in the cohort"
)


def claims() -> list[Claim]:
    common = dict(kind="hypothesis", n_train=1400, n_heldout=600)
    return [
        Claim(id="n0012", statement=LONG, test="partial_correlation", effect_train=-0.412,
              log_p_train=-40.2, effect_heldout=-0.398, log_p_heldout=-18.1, status="accepted",
              **common),
        Claim(id="n0013", statement="Smokers have higher blood pressure", test="stratified_g_test",
              effect_train=0.31, log_p_train=-9.2, effect_heldout=0.05, log_p_heldout=-0.4,
              status="refuted", reason="held-out p 0.67 > 0.05", **common),
        Claim(id="n0014", statement="Smokers have higher blood pressure", test="stratified_g_test",
              effect_train=0.31, log_p_train=-9.2, n_train=1400, kind="hypothesis",
              status="duplicate", reason="repeats n0013"),
    ]  # fmt: skip


FINDINGS = {
    "alpha": 0.05,
    "gate": "two_split",
    "mode": "discoper",
    "min_effect": 0.2,
    "split": {
        "data": "cohort.csv",
        "rows": {"train": 1400, "heldout": 600},
        "seed": 0,
        "group_column": "subject_id",
    },
}


def test_a_repeated_proposal_is_not_counted_as_tested() -> None:
    tex = render(claims(), FINDINGS)
    assert "Silva proposed 3 hypotheses about \\texttt{cohort.csv} and tested 2 distinct ones" in tex
    assert "held-out kept one row per \\texttt{subject\\_id}" in tex


@pytest.mark.slow
@needs_tex
def test_the_claims_tables_fit_the_page_and_print_every_number_whole(tmp_path: Path) -> None:
    ClaimStore(tmp_path).write(claims(), FINDINGS)
    pdf = write_findings_paper(tmp_path, sandbox="none")
    log = next((tmp_path / "paper" / "findings" / "build").glob("*.log")).read_text()
    assert "Overfull \\hbox" not in log, "a table runs past the margin"
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout
    assert re.search(r"n0012 .*\u22120\.412 .*1400 +\u22120\.398 .*\b600\b", text)
    assert re.search(r"n0013 .*\+0\.310 .*1400 +\+0\.050 .*\b600\b", text)
