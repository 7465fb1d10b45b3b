"""An offline stand-in for the discovery models (benchmarks, tests, the offline demo).

It reads only what a real model would: the prompt (the train part's column list, the prior,
Reflect's guidance, earlier hypotheses with their train evidence). It writes realistic analysis
code with `silva_stats`: group comparisons, correlations, contingency tables, adjusted
regressions, stratified re-analyses, interactions and, on discrete columns, conditional
independence tests, with one proposal in eight carrying a
real bug (a misspelt column). Known facts in the prior are proposed first with the direction
the prior states, so on a counterfactual table they fail. It knows nothing of the truth.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass

from engine.llm.providers.base import ProviderCall
from engine.llm.providers.scripted import last_user_text

BUG_EVERY = 8
COLUMN = re.compile(r"^- (\S+): (numeric|binary|discrete|categorical)", re.M)
DISCRETE = ("binary", "discrete")
FACT = re.compile(r"Known fact: (?:more |higher )?`?(\w+)`? (increases|decreases) `?(\w+)`?")
TESTED = re.compile(r"^- \[(\w+)\] (.*?) \| (.*?) \| (.*)$", re.M)
TICKED = re.compile(r"`(\w+)`")


@dataclass(frozen=True)
class Candidate:
    statement: str
    variables: tuple[str, ...]
    code: str
    expected_sign: int = 0
    plausibility: float = 0.5
    refines: str = ""

    def answer(self, bug: bool = False) -> dict[str, object]:
        code = self.code
        if bug:  # a realistic slip: a misspelt column name
            code = code.replace(f'"{self.variables[0]}"', f'"{self.variables[0]}_"', 1)
        return {
            "statement": self.statement,
            "h0": f"No association: {self.statement.lower()} is false",
            "h1": self.statement,
            "variables": list(self.variables),
            "expected_sign": self.expected_sign,
            "rationale": "follows from the data description and the evidence so far",
            "refines": self.refines,
            "code": code,
        }


HEAD = "import silva_stats as st\ndf = st.load()\n"


def _pair(x: str, kx: str, y: str, ky: str) -> Candidate:
    if kx == "binary" and ky == "numeric":
        x, y, kx, ky = y, x, ky, kx
    if ky == "binary" and kx == "numeric":
        code = HEAD + f'res = st.compare_groups(df, "{x}", "{y}")\nst.record(res, expected_sign=0)\n'
        return Candidate(f"`{x}` differs between levels of `{y}`", (x, y), code)
    if kx == "numeric" and ky == "numeric":
        code = (
            HEAD
            + f'res = st.correlation(df, "{x}", "{y}", method="pearson")\nst.record(res, expected_sign=0)\n'
        )
        return Candidate(f"`{x}` is associated with `{y}`", (x, y), code)
    if "numeric" in (kx, ky):  # integer codes against a quantity: a rank association
        code = (
            HEAD
            + f'res = st.correlation(df, "{x}", "{y}", method="spearman")\nst.record(res, expected_sign=0)\n'
        )
        return Candidate(f"`{x}` is associated with `{y}`", (x, y), code)
    code = HEAD + f'res = st.contingency(df, "{x}", "{y}")\nst.record(res, expected_sign=0)\n'
    return Candidate(f"`{x}` is associated with `{y}`", (x, y), code)


def _fact(x: str, verb: str, y: str, kinds: dict[str, str]) -> Candidate:
    sign = 1 if verb == "increases" else -1
    if kinds.get(x) == "binary" and kinds.get(y) == "numeric":
        code = (
            HEAD
            + f'res = st.compare_groups(df, "{y}", "{x}", a=1, b=0)\nst.record(res, expected_sign={sign})\n'
        )
    else:
        code = (
            HEAD
            + f'res = st.correlation(df, "{x}", "{y}", method="spearman")\n'
            + f"st.record(res, expected_sign={sign})\n"
        )
    return Candidate(f"More `{x}` {verb} `{y}`", (x, y), code, expected_sign=sign, plausibility=0.95)


def _direct(x: str, y: str, others: list[str]) -> Candidate:
    code = HEAD + (
        f'res = st.regression(df, "{y}", "{x}", covariates={others!r})\nst.record(res, expected_sign=0)\n'
    )
    return Candidate(
        f"`{x}` is directly associated with `{y}` given the other variables", (x, y, *others), code
    )


# Discrete columns: keep the pair only if no small conditioning set among the variables most
# associated with it makes it independent (the question PC asks); the largest p is recorded.
DIRECT_DISCRETE = """import itertools
import silva_stats as st
df = st.load()
a, b, others = {x!r}, {y!r}, {others!r}
def strength(c):
    return max(st.conditional_independence(df, v, c)["effect"] for v in (a, b))
near = sorted(others, key=strength, reverse=True)[:4]
sets = [list(s) for k in range(3) for s in itertools.combinations(near, k)]
tests = [st.conditional_independence(df, a, b, given=s) for s in sets]
st.record(max(tests, key=lambda r: r["log_p"]), expected_sign=0)
"""


def _direct_discrete(x: str, y: str, others: list[str]) -> Candidate:
    return Candidate(
        f"`{x}` is directly associated with `{y}` given the other variables",
        (x, y, *others),
        DIRECT_DISCRETE.format(x=x, y=y, others=others),
    )


def _score(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def base_candidates(prompt: str) -> list[Candidate]:
    kinds = dict(COLUMN.findall(prompt.split("## Tools")[0]))
    usable = [c for c, k in kinds.items() if k in ("numeric", *DISCRETE)]
    out = [_fact(x, verb, y, kinds) for x, verb, y in FACT.findall(prompt) if x in kinds and y in kinds]
    if "directly associated" in prompt.split("## Tools")[0]:
        direct = _direct_discrete if all(kinds[c] in DISCRETE for c in usable) else _direct
        out += [
            direct(x, y, [c for c in usable if c not in (x, y)]) for x, y in itertools.combinations(usable, 2)
        ]
        return out
    pairs = sorted(itertools.combinations(usable, 2), key=lambda p: _score("|".join(p)))
    out += [_pair(x, kinds[x], y, kinds[y]) for x, y in pairs]
    return [
        c
        if c.plausibility > 0.5
        else Candidate(c.statement, c.variables, c.code, c.expected_sign, 0.2 + 0.6 * _score(c.statement))
        for c in out
    ]


def guidance_candidates(prompt: str) -> list[Candidate]:
    out: list[Candidate] = []
    base = base_candidates(prompt)
    kinds = dict(COLUMN.findall(prompt.split("## Tools")[0]))
    for line in prompt.splitlines():
        names = TICKED.findall(line)
        if line.startswith("- Gap:") and len(names) == 1:  # the unexplored column's pairs, in the usual order
            out += [c for c in base if names[0] in c.variables[:2]][:2]
        elif line.startswith("- Confound:") and len(names) == 3:
            x, y, z = names
            code = HEAD + f'res = st.stratified(df, "{y}", "{x}", "{z}")\nst.record(res, expected_sign=0)\n'
            checked = [
                i for i, statement, _, _ in _tested(prompt) if set(TICKED.findall(statement)) == {x, y}
            ]
            out.append(
                Candidate(
                    f"The association of `{x}` with `{y}` holds within strata of `{z}`",
                    (x, y, z),
                    code,
                    refines=checked[0] if checked else "",
                )
            )
        elif line.startswith("- Compound:") and len(names) == 3:
            a, b, y = names
            if all(kinds.get(c) in DISCRETE for c in (a, b, y)):
                code = HEAD + (
                    f'res = st.conditional_independence(df, "{a}", "{y}", given=["{b}"])\n'
                    "st.record(res, expected_sign=0)\n"
                )
                out.append(Candidate(f"`{a}` is associated with `{y}` given `{b}`", (a, y, b), code))
            else:
                code = (
                    HEAD + f'res = st.interaction(df, "{y}", "{a}", "{b}")\nst.record(res, expected_sign=0)\n'
                )
                out.append(Candidate(f"The effect of `{a}` on `{y}` depends on `{b}`", (a, b, y), code))
    return out


def _tested(prompt: str) -> list[tuple[str, str, str, str]]:
    return TESTED.findall(prompt)


def propose(prompt: str) -> dict[str, object]:
    k = int(m.group(1)) if (m := re.search(r"Proposal #(\d+)", prompt)) else 1
    done = {statement for _, statement, _, _ in _tested(prompt)}
    guided = [c for c in guidance_candidates(prompt) if c.statement not in done]
    if guided and k % 2 == 0:
        return guided[(k // 2) % len(guided)].answer()
    base = base_candidates(prompt)
    focus = "directly associated" in prompt
    for offset in range(len(base)):
        c = base[(k - 1 + offset) % len(base)]
        if c.statement not in done:
            return c.answer(bug=not focus and k % BUG_EVERY == 0)
    return base[(k - 1) % len(base)].answer()


def seeds(prompt: str) -> dict[str, object]:
    k = int(m.group(1)) if (m := re.search(r"Seed acquisition #(\d+)", prompt)) else 1
    n = int(m.group(1)) if (m := re.search(r"propose (\d+) candidate", prompt)) else 4
    done = {statement for _, statement, _, _ in _tested(prompt)}
    base = [c for c in base_candidates(prompt) if c.statement not in done] or base_candidates(prompt)
    start = ((k - 1) * n) % len(base)
    picked = [base[(start + i) % len(base)] for i in range(min(n, len(base)))]
    return {"candidates": [{**c.answer(), "plausibility": round(c.plausibility, 3)} for c in picked]}


def refine(prompt: str) -> dict[str, object]:
    step = int(m.group(1)) if (m := re.search(r"Refinement step (\d+) of", prompt)) else 2
    chain = _tested(prompt.split("## This chain so far")[-1])
    kinds = dict(COLUMN.findall(prompt.split("## Tools")[0]))
    numeric = [c for c, kd in kinds.items() if kd in ("numeric", "binary")]
    names = TICKED.findall(chain[0][1]) if chain else []
    if len(names) < 2:
        return base_candidates(prompt)[step].answer()
    x, y = names[:2]
    sign = 1 if "=+" in chain[0][2] else -1 if "=-" in chain[0][2] else 0
    others = [c for c in numeric if c not in (x, y)]
    if step == 2:
        cov = others[:3]
        code = (
            HEAD
            + f'res = st.regression(df, "{y}", "{x}", covariates={cov!r})\n'
            + f"st.record(res, expected_sign={sign})\n"
        )
        return Candidate(
            f"`{x}` is associated with `{y}` adjusting for {', '.join(cov)}",
            (x, y, *cov),
            code,
            sign,
            refines=chain[-1][0],
        ).answer()
    if step == 3 and kinds.get(y) == "numeric" and kinds.get(x) == "numeric":
        code = (
            HEAD
            + f'res = st.correlation(df, "{x}", "{y}", method="spearman")\n'
            + f"st.record(res, expected_sign={sign})\n"
        )
        return Candidate(
            f"The rank association of `{x}` with `{y}` is robust to outliers",
            (x, y),
            code,
            sign,
            refines=chain[-1][0],
        ).answer()
    z = others[(step - 1) % len(others)] if others else x
    code = HEAD + f'res = st.stratified(df, "{y}", "{x}", "{z}")\nst.record(res, expected_sign={sign})\n'
    return Candidate(
        f"The association of `{x}` with `{y}` holds within strata of `{z}`",
        (x, y, z),
        code,
        sign,
        refines=chain[-1][0],
    ).answer()


def reflect(prompt: str) -> dict[str, object]:
    passed, used = [], set()
    for _, statement, _, verdict in _tested(prompt):
        names = TICKED.findall(statement)
        used.update(names)
        if verdict.startswith("passed") and len(names) == 2:
            passed.append((names[0], names[1]))
    linked = {frozenset(p) for p in passed}
    confounds, compounds = [], []
    for x, y in passed:
        for z in sorted({v for p in passed for v in p} - {x, y}):
            if frozenset((x, z)) in linked and frozenset((y, z)) in linked:
                confounds.append(f"the association of `{x}` with `{y}` may be explained by `{z}`")
        for a, b in passed:
            if b == y and a != x and frozenset((a, x)) not in linked:
                compounds.append(f"`{x}` and `{a}` together on `{y}`")
    kinds = dict(COLUMN.findall(prompt))
    gaps = [f"`{c}` has not been examined" for c in kinds if c not in used]
    return {"gaps": gaps[:5], "confounds": confounds[:5], "compounds": compounds[:5]}


def respond(call: ProviderCall) -> str:
    """The scripted provider's function (`scripted_fn: search.discovery.scripted:respond`)."""
    prompt = last_user_text(call.messages)
    if call.role == "vision":
        return "The figure shows the two groups' distributions; the difference matches the stated direction."
    if call.role == "feedback":
        return json.dumps(reflect(prompt))
    if "Seed acquisition" in prompt:
        return json.dumps(seeds(prompt))
    if "Refinement step" in prompt:
        return json.dumps(refine(prompt))
    return json.dumps(propose(prompt))
