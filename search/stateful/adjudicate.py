"""Local adjudication of one claim from the evidence attached to it, within its evidential scope.

Scope: a claim may not say more than its analyses support. Evidence is in scope when its
analysis used every variable the claim names and analysed exactly the claim's population; a
claim about all rows backed only by a subgroup analysis (or naming a variable no analysis used)
over-reaches, and its out-of-scope evidence counts for nothing.

Verdicts, from in-scope evidence only (gates from the discovery mode, docs/discovery.md):
- inconclusive: no in-scope test, a primary test that fails the train gate without contradicting
  the claim, or a claim that passed on train and awaits its one held-out confirmation;
- refuted: a significant effect of the opposite sign to the one claimed (train or held-out) at
  least as large as the effect floor (|d| >= min_effect, docs/discovery.md "One effect scale");
- weakened: passed on train but the held-out replication is weak, a robustness analysis
  (adjusted or stratified) loses the effect, or an analysis finds a significant opposite-signed
  effect below the floor (too small to refute, enough to doubt);
- supported: passed on train, replicated on held-out, and every robustness analysis keeps it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from search.discovery.gates import confirm_heldout, two_split_train
from search.stateful.model import Claim, Evidence, Investigation, Judgement, population_key, population_text


class Thresholds(BaseModel):
    alpha: float = Field(0.05, gt=0, lt=1)
    min_effect: float = Field(0.2, ge=0)
    replication_ratio: float = Field(0.6, ge=0, le=1)


def scope_problems(claim: Claim, evidence: Evidence) -> list[str]:
    """What the claim says beyond this analysis ([] when the analysis covers it)."""
    out = []
    missing = sorted(set(claim.variables) - evidence.analysis.variables)
    if missing:
        out.append(f"claim names {missing}, which {evidence.id} did not analyse")
    if population_key(claim.population) != population_key(evidence.analysis.population):
        out.append(
            f"claim is about {population_text(claim.population)} but {evidence.id} analysed "
            f"{population_text(evidence.analysis.population)}"
        )
    return out


def _significant_opposite(ev: Evidence, sign: int, t: Thresholds) -> bool:
    r = ev.result
    return r is not None and sign != 0 and r.sign == -sign and r.log_p <= math.log(t.alpha)


def _refutes(ev: Evidence, sign: int, t: Thresholds) -> bool:
    """Significant, opposite, and no smaller than the effect floor: what it takes to refute."""
    return (
        _significant_opposite(ev, sign, t)
        and ev.result is not None
        and abs(ev.result.effect_d) >= t.min_effect
    )


def _in_scope(inv: Investigation, check_scope: bool) -> tuple[list[Evidence], list[str]]:
    """The evidence with a result that fits the claim's scope, and what put the rest out of it."""
    problems: list[str] = []
    in_scope: list[Evidence] = []
    for ev in inv.evidence:
        if ev.result is None:
            continue
        # Covariates and strata only add variables: robustness analyses fit the scope too.
        found = scope_problems(inv.claim, ev) if check_scope else []
        if found:
            problems += found
        else:
            in_scope.append(ev)
    return in_scope, problems


def _train_verdict(
    main: Evidence, in_scope: list[Evidence], sign: int, claim_sign: int, t: Thresholds
) -> tuple[str, str] | None:
    """The verdict the train split already decides (refuted, not past the gate, or in doubt)."""
    assert main.result is not None
    refuting = [e for e in in_scope if _refutes(e, sign, t)]
    if refuting:
        d = refuting[0].result.effect_d  # type: ignore[union-attr]
        return "refuted", f"a significant effect of the opposite sign in {refuting[0].id} (d {d:+.3f})"
    gate = two_split_train(main.result, claim_sign, alpha=t.alpha, min_effect=t.min_effect)
    if not gate.passed:
        return "inconclusive", gate.reason
    doubt = [e for e in in_scope if _significant_opposite(e, sign, t)]
    if doubt:
        d = doubt[0].result.effect_d  # type: ignore[union-attr]
        return "weakened", (
            f"{doubt[0].id} finds a significant opposite-signed effect below the effect floor "
            f"(d {d:+.3f}, |d| < {t.min_effect}): too small to refute the claim"
        )
    return None


def _lost_in_robustness(in_scope: list[Evidence], sign: int, t: Thresholds) -> list[Evidence]:
    return [
        e
        for e in in_scope
        if e.role == "robustness"
        and e.split == "train"
        and e.result is not None
        and not two_split_train(e.result, sign, alpha=t.alpha, min_effect=t.min_effect).passed
    ]


def adjudicate(inv: Investigation, t: Thresholds, *, check_scope: bool = True) -> Judgement:
    """`check_scope=False` (claims without structure: nothing to compare) takes all evidence as in scope."""
    claim = inv.claim
    in_scope, problems = _in_scope(inv, check_scope)
    ids = [e.id for e in in_scope]
    primary = [e for e in in_scope if e.role == "primary" and e.split == "train"]
    if not primary:
        reason = "no in-scope analysis" + (f" (over-reach: {'; '.join(problems)})" if problems else "")
        return Judgement(verdict="inconclusive", reason=reason, in_scope=ids, scope_problems=problems)
    main = primary[0]
    assert main.result is not None
    sign = claim.expected_sign or main.result.sign
    decided = _train_verdict(main, in_scope, sign, claim.expected_sign, t)
    if decided is not None:
        return Judgement(verdict=decided[0], reason=decided[1], in_scope=ids, scope_problems=problems)
    lost = _lost_in_robustness(in_scope, sign, t)
    held = [e for e in in_scope if e.split == "heldout" and e.role == "primary"]
    if not held:
        verdict = "weakened" if lost else "inconclusive"
        reason = (
            f"the effect is lost in {', '.join(e.id for e in lost)}"
            if lost
            else "passed on train; held-out confirmation pending"
        )
        return Judgement(
            verdict=verdict, reason=reason, in_scope=ids, scope_problems=problems, awaiting_heldout=not lost
        )
    assert held[0].result is not None
    conf = confirm_heldout(
        main.result,
        held[0].result,
        claim.expected_sign,
        alpha=t.alpha,
        min_effect=t.min_effect,
        ratio=t.replication_ratio,
    )
    verdict = conf.status if conf.status in ("supported", "weakened", "refuted") else "inconclusive"
    reason = conf.reason
    if verdict == "supported" and lost:
        verdict, reason = "weakened", f"replicated on held-out but lost in {', '.join(e.id for e in lost)}"
    return Judgement(verdict=verdict, reason=reason, in_scope=ids, scope_problems=problems)


def adjudicate_naively(inv: Investigation, t: Thresholds) -> Judgement:
    """The ablation without local adjudication: any analysis that passes the train gate makes the
    claim supported, whatever its scope, robustness checks or held-out data say."""
    passing = [
        e
        for e in inv.evidence
        if e.result is not None
        and e.split == "train"
        and two_split_train(e.result, inv.claim.expected_sign, alpha=t.alpha, min_effect=t.min_effect).passed
    ]
    if passing:
        return Judgement(
            verdict="supported", reason=f"{passing[0].id} passed the train gate", in_scope=[passing[0].id]
        )
    return Judgement(verdict="inconclusive", reason="no analysis passed the train gate")


def train_status(inv: Investigation, t: Thresholds, *, check_scope: bool = True) -> str:
    """What the LLM may see of a claim: its standing on train evidence only (never held-out)."""
    hidden = inv.model_copy(update={"evidence": inv.of("train")})
    j = adjudicate(hidden, t, check_scope=check_scope)
    if j.awaiting_heldout:
        return "promising on train"
    return f"{j.verdict} on train: {j.reason}"
