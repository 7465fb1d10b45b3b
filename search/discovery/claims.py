"""The claim store: every hypothesis of a discovery run with its evidence and status, as
`discovery/claims.parquet` and `discovery/claims.json`, plus `discovery/findings.md` and
`findings.json` for the paper writer. Rebuilt from the journal's discovery events, so it is
always what the journal says; `ClaimStore.load(run_dir)` reads it back (e.g. for the
stateful discovery).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from search.discovery.data import SPLIT_DIR
from search.discovery.evidence import STATUSES, ClaimStatus

CLAIMS_PARQUET, CLAIMS_JSON = "claims.parquet", "claims.json"
FINDINGS_MD, FINDINGS_JSON = "findings.md", "findings.json"


class Claim(BaseModel):
    id: str = Field(description="the hypothesis node's id")
    kind: str = Field(
        description="hypothesis (DiscoPER), seed or refine (ExperiGen), interaction (Silva's follow-up)"
    )
    statement: str = ""
    h0: str = ""
    h1: str = ""
    variables: list[str] = Field(default_factory=list)
    code: str = ""
    test: str = ""
    effect_name: str = ""
    effect_train: float | None = None
    sign: int | None = Field(None, description="sign of the train effect")
    expected_sign: int = 0
    log_p_train: float | None = None
    n_train: int | None = None
    effect_heldout: float | None = None
    log_p_heldout: float | None = None
    n_heldout: int | None = None
    status: ClaimStatus = "proposed"
    reason: str = ""
    gate: str = ""
    parent: str | None = Field(None, description="the claim it refines (chain predecessor or declared)")
    chain: str | None = Field(None, description="ExperiGen: the chain's seed id")
    step: int = Field(1, description="refinement step within its chain (1 = the seed or a DiscoPER proposal)")
    heldout_uses: int = Field(0, description="attempts that read the held-out split for this claim")
    in_bank: bool = False
    assumptions_failed: list[str] = Field(default_factory=list)
    figure_reading: str = ""
    covariates_checked: list[str] = Field(
        default_factory=list, description="covariates Silva adjusted the claim for on held-out"
    )
    controls: int = Field(0, description="negative controls run: held-out tables with the outcome permuted")
    controls_passed: int = Field(0, description="negative controls that would have passed the held-out gate")


def counts(claims: list[Claim]) -> dict[str, int]:
    c = Counter(cl.status for cl in claims)
    return {s: c.get(s, 0) for s in STATUSES}


class ClaimStore:
    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / SPLIT_DIR

    @property
    def exists(self) -> bool:
        return (self.dir / CLAIMS_JSON).is_file()

    def write(self, claims: list[Claim], findings: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        rows = [c.model_dump(mode="json") for c in claims]
        _atomic(self.dir / CLAIMS_JSON, json.dumps(rows, indent=1))
        frame = pd.DataFrame(rows, columns=list(Claim.model_fields))
        tmp = self.dir / (CLAIMS_PARQUET + ".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(self.dir / CLAIMS_PARQUET)
        _atomic(self.dir / FINDINGS_JSON, json.dumps(findings, indent=1, default=str))
        _atomic(self.dir / FINDINGS_MD, render_findings(claims, findings))

    def load(self) -> list[Claim]:
        return [Claim.model_validate(r) for r in json.loads((self.dir / CLAIMS_JSON).read_text())]

    def frame(self) -> pd.DataFrame:
        return pd.read_parquet(self.dir / CLAIMS_PARQUET)


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _fmt(v: float | None, spec: str = "+.3f") -> str:
    return "-" if v is None else format(v, spec)


def render_findings(claims: list[Claim], findings: dict[str, Any]) -> str:
    """A findings report a paper writer can start from: method, counts, every claim's numbers."""
    split = findings.get("split", {})
    lines = [
        "# Findings",
        "",
        f"Mode: {findings.get('mode')} with the {findings.get('gate')} gate "
        f"(alpha {findings.get('alpha')}, minimum |effect| {findings.get('min_effect')}).",
        f"Data: {split.get('data')} (sha256 {str(split.get('sha256', ''))[:12]}), split once with seed "
        f"{split.get('seed')}: {split.get('rows', {}).get('train')} train rows, "
        f"{split.get('rows', {}).get('heldout')} held-out rows never shown to the model.",
        *([f"Warning: {split['warning']}."] if split.get("warning") else []),
        f"Tests on train: {findings.get('tests')}. Claims by status: "
        + ", ".join(f"{k} {v}" for k, v in counts(claims).items() if v)
        + ".",
        "",
    ]
    good = [c for c in claims if c.status in ("accepted", "supported")]
    lines += ["## Accepted claims", ""] + (
        [
            f"- **{c.statement}** ({c.id}; {c.test}, {c.effect_name} train {_fmt(c.effect_train)}, "
            f"log p {_fmt(c.log_p_train, '.2f')}, n {c.n_train}; held-out {_fmt(c.effect_heldout)}, "
            f"log p {_fmt(c.log_p_heldout, '.2f')}, n {c.n_heldout}) — {c.status}: {c.reason}"
            for c in sorted(good, key=lambda c: c.log_p_train or 0.0)
        ]
        or ["None."]
    )
    demoted = [c for c in claims if c.status in ("explained", "spurious", "duplicate")]
    lines += ["", "## Demoted claims", ""] + (
        [f"- **{c.statement}** ({c.id}) — {c.status}: {c.reason}" for c in demoted] or ["None."]
    )
    lines += ["", "## Negative controls", "", *control_lines(claims, findings.get("alpha"))]
    lines += ["", "## Reflections", ""]
    for r in findings.get("reflections", []):
        lines.append(f"Reflection {r['index']} ({r['node_id']}):")
        lines += [
            f"- {k[:-1].capitalize()}: {item}"
            for k in ("gaps", "confounds", "compounds")
            for item in r.get(k, [])
        ]
    lines += [
        "",
        "## Every claim",
        "",
        "| id | status | statement | test | effect train | log p train | "
        "effect held-out | log p held-out | held-out uses | parent |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(
            f"| {c.id} | {c.status} | {c.statement.replace('|', '/')} | {c.test} | {_fmt(c.effect_train)} | "
            f"{_fmt(c.log_p_train, '.2f')} | {_fmt(c.effect_heldout)} | {_fmt(c.log_p_heldout, '.2f')} | "
            f"{c.heldout_uses} | {c.parent or '-'} |"
        )
    return "\n".join(lines) + "\n"


def control_lines(claims: list[Claim], alpha: object) -> list[str]:
    """The negative controls of the run's decided claims (docs/discovery.md, "Silva's own checks")."""
    checked = [c for c in claims if c.controls]
    if not checked:
        return ["None ran (no claim was decided, or discovery.negative_controls is 0)."]
    runs, passed = sum(c.controls for c in checked), sum(c.controls_passed for c in checked)
    return [
        f"Each decided claim's code was re-run on held-out tables with its outcome permuted: {passed} of "
        f"{runs} controls would have passed the held-out gate ({passed / runs:.1%}; a claim is spurious "
        f"when its count is improbable at rate {alpha}).",
        "",
        *(
            f"- **{c.statement}** ({c.id}): {c.controls_passed} of {c.controls} passed — {c.status}"
            for c in checked
        ),
    ]


def status_line(run_dir: Path) -> str | None:
    """`silva status`: the claim store's counts, or None when the run is not a discovery run."""
    store = ClaimStore(run_dir)
    if not store.exists:
        return None
    c = counts(store.load())
    return (
        "claims: "
        + ", ".join(f"{v} {k}" for k, v in c.items() if v)
        + f" (total {sum(c.values())}); claim store: {store.dir / CLAIMS_PARQUET}"
    )
