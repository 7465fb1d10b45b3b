"""The findings paper of a discovery run: RUN_DIR/paper/findings/paper.tex and paper.pdf.

Written from the claim store alone (`discovery/claims.json`, `findings.json`), without an LLM:
each accepted claim with its train and held-out figures, the demoted claims and why, the claims
that did not replicate, the multiplicity control the gate used, and the negative controls Silva
ran on each decided claim (held-out tables with the outcome permuted). Every number it prints
is a field of the claim store (docs/discovery.md, "The findings paper").
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from sandbox.base import get_provider
from search.discovery.claims import Claim, ClaimStore, counts
from writeup.compile import TexBox
from writeup.results import latex_escape

FINDINGS_DIR = "findings"
GOOD = ("accepted", "supported")
NOT_REPLICATED = ("weakened", "refuted")


def is_discovery_run(run_dir: Path) -> bool:
    return ClaimStore(run_dir).exists


def _p(log_p: float | None) -> str:
    """p from the stored log p, printed at three significant digits (as an exponent when tiny)."""
    if log_p is None:
        return "--"
    if log_p > math.log(1e-4):
        return f"{math.exp(log_p):.3g}"
    exponent = log_p / math.log(10)
    mantissa = 10 ** (exponent - math.floor(exponent))
    return f"${mantissa:.2f}\\times10^{{{math.floor(exponent)}}}$"


def _num(v: float | None, spec: str = "+.3f") -> str:
    """In math mode: a text hyphen is not a minus sign."""
    return "--" if v is None else f"${format(v, spec)}$"


def _breakable(text: str) -> str:
    """Escaped for LaTeX, with a line break allowed after each underscore (long test names)."""
    return latex_escape(text).replace(r"\_", r"\_\allowbreak{}")


def control_text(findings: dict[str, Any]) -> str:
    """What bounded false discoveries in this run, in the gate's own terms."""
    alpha, floor = findings.get("alpha"), findings.get("min_effect")
    gate = findings.get("gate")
    size = f"and an effect of at least {floor} as Cohen's d (r, $\\beta$, $\\phi$ and V converted)"
    if gate == "two_split":
        return (
            f"Two-split gate: a claim needed $p \\le {alpha}$ on the training rows {size}, then one "
            "replication on held-out rows it never saw: $p \\le "
            f"{alpha}$, the same sign and at least {findings.get('replication_ratio', 0.6)} of the training "
            "effect. The held-out replication, read once per claim, is the control of false discoveries; "
            "no correction for the number of hypotheses is applied on the training rows."
        )
    if gate == "bonferroni":
        return (
            f"Bonferroni gate: each test needed $p < {alpha}/T$ with T the tests of its family {size}; "
            "accepted claims were confirmed once on held-out rows when the run asked for it."
        )
    return (
        f"Benjamini--Hochberg gate: false-discovery rate {alpha} over the {findings.get('tests')} "
        f"hypotheses tested, {size}; accepted claims were confirmed once on held-out rows when the run "
        "asked for it."
    )


def _row(c: Claim) -> str:
    cells = [
        c.id,
        latex_escape(c.statement),
        _breakable(c.test),
        _num(c.effect_train),
        _p(c.log_p_train),
        str(c.n_train or "--"),
        _num(c.effect_heldout),
        _p(c.log_p_heldout),
        str(c.n_heldout or "--"),
    ]
    return " & ".join(cells) + r" \\"


# The claim and test columns wrap so that the table spans the text width and no number runs
# off the page (a held-out n of 600 once printed as 60).
TABLE_HEAD = (
    r"\begin{tabularx}{\linewidth}{@{}l >{\raggedright\arraybackslash}X "
    r">{\raggedright\arraybackslash}p{2.1cm} r r r r r r@{}}" + "\n\\hline\n"
    r"id & claim & test & effect & $p$ & $n$ & effect & $p$ & $n$ \\" + "\n"
    r" & & & \multicolumn{3}{c}{train} & \multicolumn{3}{c}{held-out} \\" + "\n\\hline"
)


def _table(claims: list[Claim]) -> list[str]:
    return ["{\\small", TABLE_HEAD, *[_row(c) for c in claims], "\\hline", "\\end{tabularx}}"]


def _controls(claims: list[Claim], findings: dict[str, Any]) -> list[str]:
    """Each decided claim's negative controls: its code on held-out rows with the outcome permuted."""
    checked = [c for c in claims if c.controls]
    if not checked:
        return [
            "No negative control ran: no claim was decided, or the run set "
            "\\texttt{discovery.negative\\_controls} to 0."
        ]
    runs, passed = sum(c.controls for c in checked), sum(c.controls_passed for c in checked)
    return [
        "Each decided claim's analysis was re-run on held-out tables whose outcome column was permuted "
        "(whole groups trading values when the rows form groups), so that no effect exists; a control "
        f"passes when the held-out gate would have accepted it. {passed} of {runs} controls passed "
        f"({100 * passed / runs:.1f}\\%), the pipeline's empirical false-acceptance rate on these data. "
        f"A claim whose count is improbable at rate {findings.get('alpha')} (binomial tail "
        f"$\\le {findings.get('alpha')}$) is marked spurious.",
        r"\begin{itemize}",
        *(
            f"\\item {c.id}: {latex_escape(c.statement)} --- {c.controls_passed} of {c.controls} passed"
            + (" (spurious)" if c.status == "spurious" else "")
            for c in checked
        ),
        r"\end{itemize}",
    ]


def _method(split: dict[str, Any], findings: dict[str, Any]) -> list[str]:
    """The Method section: the mode, the one split and what it kept together."""
    rows = split.get("rows", {})
    return [
        r"\section{Method}",
        f"Mode {latex_escape(str(findings.get('mode')))}. The table (sha256 "
        f"\\texttt{{{str(split.get('sha256', ''))[:12]}}}) was split once with seed {split.get('seed')} into "
        f"{rows.get('train')} training and {rows.get('heldout')} held-out rows; exact duplicate rows"
        + (
            f" and rows sharing \\texttt{{{latex_escape(split['group_column'])}}}"
            if split.get("group_column")
            else ""
        )
        + " were kept on one side"
        + (
            f", and held-out kept one row per \\texttt{{{latex_escape(split['group_column'])}}}"
            if split.get("group_column")
            else ""
        )
        + ". Hypotheses were written and tested on the training rows only.",
        *([f"Warning: {latex_escape(split['warning'])}."] if split.get("warning") else []),
        "",
        control_text(findings),
    ]


def _demoted(explained: list[Claim], duplicates: list[Claim]) -> list[str]:
    if not (explained or duplicates):
        return ["No accepted claim was demoted."]
    return [
        r"\begin{itemize}",
        *[
            f"\\item {x.id}: {latex_escape(x.statement)} --- {latex_escape(x.reason)}"
            for x in (*explained, *duplicates)
        ],
        r"\end{itemize}",
    ]


def _not_replicated(failed: list[Claim]) -> list[str]:
    if not failed:
        return ["No claim failed its held-out replication."]
    return [
        *_table(failed),
        r"\begin{itemize}",
        *[f"\\item {x.id} ({x.status}): {latex_escape(x.reason)}" for x in failed],
        r"\end{itemize}",
    ]


def render(claims: list[Claim], findings: dict[str, Any]) -> str:
    split = findings.get("split", {})
    rows = split.get("rows", {})
    good = sorted((x for x in claims if x.status in GOOD), key=lambda x: x.log_p_train or 0.0)
    explained = [x for x in claims if x.status in ("explained", "spurious")]
    duplicates = [x for x in claims if x.status == "duplicate"]
    failed = [x for x in claims if x.status in NOT_REPLICATED]
    data = latex_escape(Path(str(split.get("data", "the table"))).name)
    # A repeated proposal shows its first test's evidence: one test, counted once.
    tested = sum(x.log_p_train is not None and x.status != "duplicate" for x in claims)
    lines = [
        r"\documentclass[11pt]{article}",
        r"\usepackage[margin=2cm]{geometry}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage{tabularx}",
        r"\begin{document}",
        f"\\title{{Findings of a data-driven discovery run on \\texttt{{{data}}}}}",
        r"\author{Silva}",
        r"\date{}",
        r"\maketitle",
        r"\begin{abstract}",
        f"Silva proposed {len(claims)} hypotheses about \\texttt{{{data}}} and tested {tested} distinct ones "
        f"on {rows.get('train')} training rows. {len(good)} claim(s) stand accepted by the "
        f"{latex_escape(str(findings.get('gate')))} gate; {len(explained)} further claim(s) were accepted, "
        "then explained by a confounder or failed their negative controls; "
        f"{len(failed)} did not replicate on the "
        f"{rows.get('heldout')} held-out rows; {len(duplicates)} proposal(s) repeated an earlier "
        "hypothesis and were not tested again.",
        r"\end{abstract}",
        *_method(split, findings),
        r"\section{Accepted claims}",
        *(_table(good) if good else ["No claim was accepted."]),
        r"\section{Demoted claims and repeated proposals}",
        *_demoted(explained, duplicates),
        r"\section{Claims that did not replicate}",
        *_not_replicated(failed),
        r"\section{Negative controls}",
        *_controls(claims, findings),
        r"\section{All hypotheses}",
        "Claims by status: " + ", ".join(f"{k} {v}" for k, v in counts(claims).items() if v) + ".",
        r"\end{document}",
    ]
    return "\n".join(lines) + "\n"


def write_findings_paper(
    run_dir: Path, *, sandbox: str = "local", sandbox_options: dict[str, Any] | None = None
) -> Path:
    """Write and compile the findings paper; returns the PDF's path."""
    store = ClaimStore(run_dir)
    if not store.exists:
        raise ConfigError(f"{run_dir}: not a discovery run (no {store.dir.name}/claims.json)")
    findings = json.loads((store.dir / "findings.json").read_text())
    out = run_dir / "paper" / FINDINGS_DIR
    build = out / "build"
    build.mkdir(parents=True, exist_ok=True)
    tex = render(store.load(), findings)
    (build / "paper.tex").write_text(tex)
    (out / "paper.tex").write_text(tex)
    result = TexBox(get_provider(sandbox, **(sandbox_options or {})), build).compile()
    if not result.ok or result.pdf is None:
        problems = "; ".join(str(e) for e in result.errors[:3])
        raise ConfigError(f"{out / 'paper.tex'}: the findings paper did not compile: {problems}")
    shutil.copyfile(result.pdf, out / "paper.pdf")
    return out / "paper.pdf"
