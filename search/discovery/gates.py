"""Acceptance gates: pure functions from evidence to a decision that carries every number it used.

- `two_split_train` / `two_split_heldout` (DiscoPER): |effect| >= min_effect and p <= alpha on
  train; then, once, the same on held-out with the same sign and
  |effect_heldout| >= ratio x |effect_train|.
- `bonferroni_chain` (ExperiGen): within a refinement chain of T steps each test needs
  p < alpha / T; the global count of tests so far is recorded beside it.
- `benjamini_hochberg` over the whole bank, on log p (p-values below 1e-308 stay ordered).
- `confirm_heldout`: the held-out verdict of a claim accepted by a one-split gate. Refuted takes a
  significant opposite-signed effect of at least `min_effect`; a smaller one only weakens.
- `control_passed` / `negative_controls`: the claim's held-out test re-run on tables whose
  outcome is permuted; a claim whose controls pass the held-out gate more often than alpha allows
  is `spurious` (docs/discovery.md, "Silva's own checks").
- `duplicate`: a hypothesis identical to an earlier one (`hypothesis_key`) is not gated again.
- `confound_check`: an adjusted or stratified re-analysis of an accepted claim that finds no
  effect demotes the claim to `explained`.

Every size condition reads the effect as Cohen's d (`TestOutcome.effect_d`: r, standardized beta,
phi and Cramér's V converted as for two equal groups), so `min_effect` is one effect size whatever
the tool that measured it (docs/discovery.md, "One effect scale").

A hypothesis that predicts a direction (`expected_sign`) fails any gate when the data show the
opposite sign: the claim as stated is wrong even if the association is real.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from search.discovery.evidence import ClaimStatus, TestOutcome


class GateDecision(BaseModel):
    gate: str
    passed: bool
    status: ClaimStatus
    reason: str
    numbers: dict[str, Any] = Field(default_factory=dict)


def _sign_ok(ev: TestOutcome, expected_sign: int) -> bool:
    return expected_sign == 0 or ev.sign == expected_sign


def _small(ev: TestOutcome, min_effect: float) -> str:
    shown = "" if ev.effect_d == ev.effect else f" ({ev.effect_name} {ev.effect:+.3f})"
    return f"|effect| as d {abs(ev.effect_d):.3f}{shown} < {min_effect}"


def two_split_train(ev: TestOutcome, expected_sign: int, *, alpha: float, min_effect: float) -> GateDecision:
    log_alpha = math.log(alpha)
    numbers = {
        "effect": ev.effect,
        "effect_d": ev.effect_d,
        "log_p": ev.log_p,
        "n": ev.n,
        "alpha": alpha,
        "min_effect": min_effect,
        "expected_sign": expected_sign,
    }
    fails = []
    if abs(ev.effect_d) < min_effect:
        fails.append(_small(ev, min_effect))
    if ev.log_p > log_alpha:
        fails.append(f"p {ev.p:.3g} > {alpha}")
    if not _sign_ok(ev, expected_sign):
        fails.append(f"effect sign {ev.sign:+d} opposite to the predicted {expected_sign:+d}")
    if fails:
        return GateDecision(
            gate="two_split",
            passed=False,
            status="rejected",
            numbers=numbers,
            reason="train: " + "; ".join(fails),
        )
    return GateDecision(
        gate="two_split",
        passed=True,
        status="proposed",
        numbers=numbers,
        reason="train passed; held-out evaluation pending",
    )


def _heldout_verdict(
    train: TestOutcome,
    held: TestOutcome,
    expected_sign: int,
    *,
    alpha: float,
    min_effect: float,
    ratio: float,
) -> tuple[str, list[str], dict[str, Any]]:
    """'pass', 'weak' or 'opposite', the failed conditions, and the numbers."""
    numbers = {
        "effect_train": train.effect,
        "effect_heldout": held.effect,
        "effect_d_train": train.effect_d,
        "effect_d_heldout": held.effect_d,
        "log_p_heldout": held.log_p,
        "n_heldout": held.n,
        "alpha": alpha,
        "min_effect": min_effect,
        "replication_ratio": ratio,
        "expected_sign": expected_sign,
    }
    if held.sign != train.sign and held.log_p <= math.log(alpha) and abs(held.effect_d) >= min_effect:
        return "opposite", [f"held-out effect {held.effect:+.3f} significant with the opposite sign"], numbers
    fails = []
    if held.sign != train.sign:
        fails.append(f"held-out sign {held.sign:+d} differs from train {train.sign:+d}")
    if abs(held.effect_d) < min_effect:
        fails.append("held-out " + _small(held, min_effect))
    if held.log_p > math.log(alpha):
        fails.append(f"held-out p {held.p:.3g} > {alpha}")
    if abs(held.effect_d) < ratio * abs(train.effect_d):
        fails.append(f"held-out |effect| {abs(held.effect):.3f} < {ratio} x train {abs(train.effect):.3f}")
    if not _sign_ok(held, expected_sign):
        fails.append("held-out sign opposite to the predicted one")
    return ("weak" if fails else "pass"), fails, numbers


def _heldout_decision(
    gate: str,
    passed: tuple[ClaimStatus, str],
    train: TestOutcome,
    held: TestOutcome,
    expected_sign: int,
    *,
    alpha: float,
    min_effect: float,
    ratio: float,
) -> GateDecision:
    """The decision of a held-out gate: `passed` is its status and reason when held-out replicates."""
    verdict, fails, numbers = _heldout_verdict(
        train, held, expected_sign, alpha=alpha, min_effect=min_effect, ratio=ratio
    )
    failed: dict[str, ClaimStatus] = {"weak": "weakened", "opposite": "refuted"}
    status, reason = passed if verdict == "pass" else (failed[verdict], "held-out: " + "; ".join(fails))
    return GateDecision(gate=gate, passed=verdict == "pass", status=status, reason=reason, numbers=numbers)


def two_split_heldout(
    train: TestOutcome,
    held: TestOutcome,
    expected_sign: int,
    *,
    alpha: float,
    min_effect: float,
    ratio: float,
) -> GateDecision:
    return _heldout_decision(
        "two_split",
        ("accepted", "train and held-out passed"),
        train,
        held,
        expected_sign,
        alpha=alpha,
        min_effect=min_effect,
        ratio=ratio,
    )


def confirm_heldout(
    train: TestOutcome,
    held: TestOutcome,
    expected_sign: int,
    *,
    alpha: float,
    min_effect: float,
    ratio: float,
) -> GateDecision:
    """The held-out confirmation of a claim a one-split gate accepted."""
    return _heldout_decision(
        "heldout_confirmation",
        ("supported", "held-out replicated the effect"),
        train,
        held,
        expected_sign,
        alpha=alpha,
        min_effect=min_effect,
        ratio=ratio,
    )


def _decide(
    gate: str,
    ev: TestOutcome | None,
    expected_sign: int,
    numbers: dict[str, Any],
    not_significant: str | None,
    *,
    min_effect: float,
    passed_reason: str,
) -> GateDecision:
    """One claim's decision at a multiple-testing gate: significant (`not_significant` is None),
    at least the effect floor, and of the predicted sign."""
    if ev is None:
        return GateDecision(
            gate=gate,
            passed=False,
            status="inconclusive",
            numbers=numbers,
            reason="the analysis produced no test result",
        )
    numbers.update(
        effect=ev.effect, effect_d=ev.effect_d, log_p=ev.log_p, n=ev.n, expected_sign=expected_sign
    )
    fails = [not_significant] if not_significant else []
    if abs(ev.effect_d) < min_effect:
        fails.append(_small(ev, min_effect))
    if not _sign_ok(ev, expected_sign):
        fails.append(f"effect sign {ev.sign:+d} opposite to the predicted {expected_sign:+d}")
    return GateDecision(
        gate=gate,
        passed=not fails,
        status="rejected" if fails else "accepted",
        numbers=numbers,
        reason="; ".join(fails) or passed_reason,
    )


def bonferroni_chain(
    steps: Sequence[tuple[str, TestOutcome | None, int]],
    *,
    alpha: float,
    min_effect: float,
    chain_length: int,
    global_tests: int,
) -> tuple[str | None, dict[str, GateDecision]]:
    """Decide every step of a finished chain: (best accepted step id or None, decision per step).

    `steps`: (id, evidence or None when the code failed, expected sign). The threshold is
    alpha / T with T the chain's declared length, so stopping a chain early never loosens it.
    The best accepted step has the smallest log p."""
    threshold = alpha / chain_length
    log_threshold = math.log(threshold)
    decisions: dict[str, GateDecision] = {}
    best: tuple[float, str] | None = None
    for sid, ev, expected_sign in steps:
        numbers: dict[str, Any] = {
            "alpha": alpha,
            "chain_length": chain_length,
            "threshold": threshold,
            "global_tests": global_tests,
            "min_effect": min_effect,
        }
        not_significant = (
            f"p {ev.p:.3g} >= alpha/T = {threshold:.3g}"
            if ev is not None and ev.log_p >= log_threshold
            else None
        )
        decisions[sid] = _decide(
            "bonferroni",
            ev,
            expected_sign,
            numbers,
            not_significant,
            min_effect=min_effect,
            passed_reason=f"p < alpha/T = {threshold:.3g} (global tests so far: {global_tests})",
        )
        if decisions[sid].passed and ev is not None and (best is None or ev.log_p < best[0]):
            best = (ev.log_p, sid)
    return (best[1] if best else None), decisions


def benjamini_hochberg(log_ps: dict[str, float], *, alpha: float) -> tuple[set[str], float | None]:
    """Ids rejected as null at false-discovery rate alpha, and the log-p cutoff used (None: none).

    Step-up: the largest rank k with log p_(k) <= log(alpha k / m); all ranks up to k pass."""
    m = len(log_ps)
    ranked = sorted(log_ps.items(), key=lambda kv: kv[1])
    cutoff_rank = 0
    for k, (_, lp) in enumerate(ranked, start=1):
        if lp <= math.log(alpha * k / m):
            cutoff_rank = k
    if cutoff_rank == 0:
        return set(), None
    return {i for i, _ in ranked[:cutoff_rank]}, ranked[cutoff_rank - 1][1]


def bh_decisions(
    evidence: Mapping[str, tuple[TestOutcome | None, int]], *, alpha: float, min_effect: float
) -> dict[str, GateDecision]:
    """The BH gate over the whole bank: discovery by BH, then effect size and predicted sign."""
    tested = {i: ev.log_p for i, (ev, _) in evidence.items() if ev is not None}
    discovered, cutoff = benjamini_hochberg(tested, alpha=alpha)
    out: dict[str, GateDecision] = {}
    for i, (ev, expected_sign) in evidence.items():
        numbers: dict[str, Any] = {
            "alpha": alpha,
            "m": len(tested),
            "log_p_cutoff": cutoff,
            "min_effect": min_effect,
        }
        not_discovered = (
            f"not a BH discovery at FDR {alpha} among {len(tested)} tests" if i not in discovered else None
        )
        out[i] = _decide(
            "bh",
            ev,
            expected_sign,
            numbers,
            not_discovered,
            min_effect=min_effect,
            passed_reason=f"BH discovery at FDR {alpha} among {len(tested)} tests",
        )
    return out


def confound_check(
    check_id: str, check: TestOutcome, *, alpha: float, min_effect: float, covariate: str | None = None
) -> GateDecision | None:
    """The demotion of the claim that `check` (an adjusted or stratified re-analysis of it) tests:
    `explained` when within strata / given the covariates the effect is gone (p > alpha or
    |d| < min_effect), None when the effect survives. `covariate`: the one the check added to what
    the claim already adjusted for (Silva's own adjustment), named as the explanation."""
    given = ", ".join(check.adjusted_for) or "its covariates"
    by = covariate or given
    numbers = {
        "check": check_id,
        "adjusted_for": check.adjusted_for,
        "effect": check.effect,
        "effect_d": check.effect_d,
        "log_p": check.log_p,
        "n": check.n,
        "alpha": alpha,
        "min_effect": min_effect,
    }
    fails = []
    if check.log_p > math.log(alpha):
        fails.append(f"p {check.p:.3g} > {alpha}")
    if abs(check.effect_d) < min_effect:
        fails.append(_small(check, min_effect))
    if not fails:
        return None
    return GateDecision(
        gate="confound_check",
        passed=False,
        status="explained",
        numbers=numbers,
        reason=f"explained by {by}: {check_id} ({check.test}) finds no effect given {given}: "
        + "; ".join(fails),
    )


def duplicate(first: str) -> GateDecision:
    """A hypothesis identical to `first` (same normalized code, variables and predicted sign):
    tested once, answered by `first`'s verdict, never counted or read on held-out twice."""
    return GateDecision(
        gate="duplicate",
        passed=False,
        status="duplicate",
        numbers={"duplicate_of": first},
        reason=f"identical to {first} (same normalized code, variables and predicted sign): "
        f"answered by {first}",
    )


def control_passed(
    gate: str,
    train: TestOutcome,
    control: TestOutcome | None,
    expected_sign: int,
    *,
    alpha: float,
    min_effect: float,
    ratio: float,
) -> bool:
    """Whether a negative control (the claim's code on held-out rows with its outcome permuted)
    would have passed the run's held-out gate, as the real held-out evaluation did."""
    if control is None:
        return False
    decide = two_split_heldout if gate == "two_split" else confirm_heldout
    return decide(train, control, expected_sign, alpha=alpha, min_effect=min_effect, ratio=ratio).passed


def binomial_tail(k: int, n: int, rate: float) -> float:
    """P(X >= k) for X ~ Binomial(n, rate)."""
    return sum(math.comb(n, i) * rate**i * (1 - rate) ** (n - i) for i in range(max(k, 0), n + 1))


def negative_controls(column: str, passed: int, runs: int, *, alpha: float) -> GateDecision | None:
    """`spurious` when `passed` of `runs` null controls passing is improbable for a gate that
    accepts a null effect at most at rate alpha: P(Binomial(runs, alpha) >= passed) <= alpha.
    None when the controls pass rarely enough. The held-out gate's own null rate is about alpha/2
    (it also asks for the training sign), so an honest claim is flagged far less often than alpha."""
    tail = binomial_tail(passed, runs, alpha)
    if runs == 0 or passed == 0 or tail > alpha:
        return None
    return GateDecision(
        gate="negative_controls",
        passed=False,
        status="spurious",
        numbers={
            "permuted": column,
            "controls": runs,
            "controls_passed": passed,
            "alpha": alpha,
            "tail_p": tail,
        },
        reason=f"spurious: {passed} of {runs} negative controls ({column!r} permuted on held-out) passed the "
        f"held-out gate, P(>= {passed} | rate {alpha}) = {tail:.2g}: the analysis finds its effect where "
        "there is none",
    )
