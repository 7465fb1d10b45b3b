"""Claims whatever the wording: planted errors and honest paraphrases written the way LLM writers
phrase comparisons, inserted one at a time into Silva's own papers and reviewed by the real
integrity check (`run_checks`, the path `silva review` takes offline).

The phrase bank (bench/claims_corpus/) was written apart from Silva's writer templates and from the
checker's code, in batches: `tune.yaml`/`heldout.yaml` are batch "a", `tune_b.yaml`/
`heldout_b.yaml` batch "b" (a later, independent author), and so on; `tune*.yaml` make the half
"tune" and `heldout*.yaml` the half "heldout", each half also reported per batch. A phrasing is a
template with slots ({method}, {baseline}, {metric}, {a}, {b}, {pct}...) filled from one claim of a
paper's ledger (a group by its readable name where the ledger has one, as the writers show it, else
by its label), so a planted error is wrong by construction and an honest paraphrase true by
construction. Each error phrasing makes one variant and each honest phrasing two (on two different
claims), in a paper and claim chosen by a seeded hash among those the phrasing fits; the variant
sits at the end of the body, right after a section heading, or in the appendix (also by hash).

Papers: the label-noise agentic example, the digits template example and the asymmetric
label-noise idea (agentic), each written by the offline writer and by the scripted LLM writer of
tests/writeup (Welch test). Reported per half and per kind: planted errors found, honest
paraphrases flagged (a variant counts only findings its unmodified paper does not have), and the
findings on the unmodified papers. Targets on the held-out half:
>= 95% found, <= 2% honest flagged, 0 findings on Silva's own papers.
Writes bench/results/claims_wording.json.

    python bench/bench_claims_wording.py                 # runs the three examples first (minutes)
    python bench/bench_claims_wording.py --runs DIR...   # finished run directories instead
    python bench/bench_claims_wording.py --dry-run       # fill and count only, no review
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine.claims import Claim, GroupSummary, Ledger  # noqa: E402
from writeup.results import decimals_for, format_number, format_p, latex_escape  # noqa: E402

CORPUS = ROOT / "bench" / "claims_corpus"
HALVES = ("tune", "heldout")
# Batches whose held-out half was reported and then read while tuning the checker (a-e: each was
# reported twice, then tuned on). They are scored as "spent", apart from the untouched held-out
# batches whose figures are the targets' (docs/benchmarks.md, "Claims whatever the wording").
SPENT = ("a", "b", "c", "d", "e")
GROUPS = ("tune", "spent", "heldout")
SPLIT_SEED = "silva-claims-corpus"
HONEST = "honest"
ERROR_KINDS = (
    "inverted_comparison",
    "false_comparison",
    "significance_at_p_over_alpha",
    "number_moved_to_other_group",
    "wrong_number",
    "selection_metric_as_test",
    "unmeasured_metric",
    "absent_group",
    "fabricated_reference",
)
NEEDS = {
    "significant", "no_difference", "better", "worse", "selection", "test", "distinct", "unit", "fold",
    "same_n", "accuracy", "maximize", "tested", "pct", "nonzero", "our_method",
}  # fmt: skip
SLOT = re.compile(r"\{([A-Za-z_]+)\}")
# Braced words in the templates that are LaTeX arguments, not slots.
LATEX_ARGS = re.compile(r"^(table|tabular|center|[lcr|]+)$")
PLACEMENTS = ("body_end", "after_heading", "appendix")
EXAMPLES = (("ideas", None), ("digits_rff", None), ("ideas", "label_noise_asymmetric.yaml"))


class Phrasing(BaseModel):
    text: str
    needs: list[str] = Field(default_factory=list)


class KindSpec(BaseModel):
    needs: list[str] = Field(default_factory=list)
    phrasings: list[Phrasing]


class Reference(BaseModel):
    key: str
    author: str
    title: str
    year: int


class Fakes(BaseModel):
    metrics: list[str]
    groups: list[str]
    references: list[Reference]


class Half(BaseModel):
    """One corpus file: one batch's share of a half."""

    half: str
    batch: str = "a"
    kinds: dict[str, KindSpec]
    fakes: Fakes


def batch_of(stem: str) -> str:
    """A corpus file's batch: "a" for tune.yaml and heldout.yaml, "b" for tune_b.yaml..."""
    return stem.partition("_")[2] or "a"


def load_half(name: str, corpus: Path = CORPUS) -> Half:
    """The corpus file `name`.yaml (a file stem: "tune", "heldout_b"...)."""
    raw = yaml.safe_load((corpus / f"{name}.yaml").read_text())
    for spec in raw["kinds"].values():
        spec["phrasings"] = [p if isinstance(p, dict) else {"text": p} for p in spec["phrasings"]]
    half = Half.model_validate({**raw, "batch": batch_of(name)})
    if half.half != name.partition("_")[0]:
        raise ValueError(f"{name}.yaml says half {half.half!r}")
    return half


def load_batches(half: str, corpus: Path = CORPUS, batches: tuple[str, ...] | None = None) -> list[Half]:
    """Every batch of `half` (or those in `batches`, the others' files left unread): the files
    named `half`.yaml and `half`_<batch>.yaml."""
    stems = sorted(p.stem for p in corpus.glob(f"{half}*.yaml"))
    stems = [s for s in stems if s == half or s.startswith(f"{half}_")]
    return [load_half(s, corpus) for s in stems if batches is None or batch_of(s) in batches]


def split_key(kind: str, text: str) -> str:
    """The split rule: within a kind, phrasings sorted by this hash; the first half (rounded up)
    is `tune`, the rest `heldout`."""
    return hashlib.sha256(f"{SPLIT_SEED}/{kind}\n{text}".encode()).hexdigest()


def _hash(*parts: object) -> int:
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:12], 16)


_COMPARES = ("winner", "Winner", "loser", "Loser", "w", "l", "pct", "pts", "fold", "w_wrong", "l_wrong")


def needs_of(kind: str, spec: KindSpec, phrasing: Phrasing) -> set[str]:
    """The kind's needs, the phrasing's own, and those its wording implies: accuracy words need an
    accuracy metric, "our method" the paper's method, 'higher'/'lower' a maximized metric, points
    and percentages a metric in [0, 1], and a winner or a relative gain two means that differ,
    and a significant claim unless the phrasing is about a claim without a detectable difference."""
    needs = set(spec.needs) | set(phrasing.needs)
    text, slots = phrasing.text, set(SLOT.findall(phrasing.text))
    if re.search(r"(?i)\bour (method|approach)\b", text):
        needs.add("our_method")
    if re.search(r"(?i)accura", text):
        needs |= {"accuracy", "maximize"}
    if re.search(r"\b(higher|lower|raises?|rises?|drop|boost)\b", text):
        needs.add("maximize")
    if slots & {"pts", "pts_wrong", "a_pct", "b_pct", "a_pct_wrong", "b_pct_wrong"}:
        needs.add("unit")
    if slots & {"fold", "fold_wrong"}:
        needs.add("fold")
    if slots & {"pct", "pct_wrong"}:
        needs.add("pct")
    if slots & {"delta", "diff", "pts", "delta_wrong"}:
        needs.add("nonzero")
    if slots & {"p", "pexpr"}:
        needs.add("tested")
    if slots & set(_COMPARES):
        needs.add("distinct")  # two equal means have no leader
        if not needs & {"no_difference", "significant", "better", "worse"}:
            needs.add("significant")
    return needs


class Numbers(NamedTuple):
    """A claim's numbers as a paper prints them."""

    a: str
    b: str
    digits: int
    winner_is_subject: bool


def _num(value: float, digits: int) -> str:
    return format_number(value, digits)[0]


def _printed(claim: Claim) -> Numbers:
    s, r = claim.subject, claim.reference
    digits = max(decimals_for(s.mean), decimals_for(r.mean))
    if claim.verdict in ("better", "worse"):
        subject_wins = claim.verdict == "better"
    else:  # no verdict: the observed leader, oriented by the metric's direction
        subject_wins = (claim.diff >= 0) == (claim.direction == "maximize")
    return Numbers(
        _num(s.mean, decimals_for(s.mean)), _num(r.mean, decimals_for(r.mean)), digits, subject_wins
    )


def _fold(claim: Claim) -> float | None:
    w, lo = (
        (claim.subject, claim.reference)
        if _printed(claim).winner_is_subject
        else (claim.reference, claim.subject)
    )
    if not (0 <= w.mean < 1 and 0 <= lo.mean <= 1) or claim.direction != "maximize":
        return None
    return (1 - lo.mean) / (1 - w.mean)


def eligible(claim: Claim, needs: set[str], method: str | None = None) -> bool:
    """Whether `claim` fits a phrasing with `needs`; `method` is the label of the paper's method
    (its headline claim's subject), the only group a phrasing may call "our method"."""
    s, r = claim.subject, claim.reference
    nums = _printed(claim)
    loser = r if nums.winner_is_subject else s
    tests = {
        "significant": claim.verdict in ("better", "worse"),
        "no_difference": claim.verdict == "no detectable difference",
        "better": claim.verdict == "better",
        "worse": claim.verdict == "worse",
        "selection": claim.role == "selection",
        "test": claim.role == "test",
        "distinct": nums.a != nums.b,
        "unit": all(0 <= g.mean <= 1 for g in (s, r)),
        "fold": (f := _fold(claim)) is not None and round(f, 1) >= 1.2,
        "same_n": s.n == r.n,
        "accuracy": "accuracy" in claim.metric.lower(),
        "maximize": claim.direction == "maximize",
        "tested": claim.p is not None and claim.log10_p is not None,
        "pct": loser.mean != 0 and round(abs(claim.diff / loser.mean) * 100, 1) > 0,
        "nonzero": round(abs(claim.diff), nums.digits) > 0 and round(abs(claim.diff) * 100, 1) > 0,
        "our_method": s.label == method,
    }
    return all(tests[n] for n in needs) and shown(s) != shown(r)


def shown(group: GroupSummary) -> str:
    """A group as papers show it: its readable name (what the writers receive), else its label."""
    return group.name or group.label


def readable_metric(name: str) -> str:
    text = re.sub(r"_s$", " (s)", name).replace("_", " ")
    text = re.sub(r"(?i)(?<![a-z])(val|valid)(?![a-z])", "validation", text)
    return latex_escape(text)


def abbreviation(label: str) -> str:
    words = re.findall(r"[A-Za-z]+", label.split("(")[0])
    abbr = "".join(w[0] for w in words).upper()
    return abbr if len(abbr) >= 2 else re.sub(r"[^A-Za-z]", "", label)[:3].upper() or "M"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _wrong(value: float, digits: int, avoid: set[str]) -> str:
    """A value that prints differently from the true one and from every value in `avoid`."""
    for factor in (0.93, 0.88, 1.07, 0.8, 1.2):
        shifted = value * factor if value != 0 else value + 0.07 * factor
        text = _num(shifted, max(digits, decimals_for(shifted)))
        if text not in avoid:
            return text
    return _num(value + 1.234, digits)


def _unlike(names: list[str], taken: set[str]) -> list[str]:
    """The invented names that neither contain nor sit inside a name the paper has."""
    low = {t.lower() for t in taken}
    return [n for n in names if not any(n.lower() in t or t in n.lower() for t in low)]


def slots(claim: Claim, fakes: Fakes, seed: int, taken: set[str]) -> dict[str, str]:
    """Every slot's text for `claim` (wrong values are wrong at the printed precision); the
    invented metric and group avoid every name in `taken` (the paper's groups and metrics)."""
    s, r = claim.subject, claim.reference
    metrics, groups = _unlike(fakes.metrics, taken), _unlike(fakes.groups, taken)
    nums = _printed(claim)
    w, lo = (s, r) if nums.winner_is_subject else (r, s)
    text_w, text_l = (nums.a, nums.b) if nums.winner_is_subject else (nums.b, nums.a)
    avoid = {nums.a, nums.b}
    pct = abs(claim.diff / lo.mean) * 100 if lo.mean else 0.0
    pts = abs(claim.diff) * 100
    fold = _fold(claim) or 1.0
    ref = fakes.references[seed % len(fakes.references)]
    out = {
        "method": latex_escape(shown(s)),
        "baseline": latex_escape(shown(r)),
        "winner": latex_escape(shown(w)),
        "loser": latex_escape(shown(lo)),
        "metric": readable_metric(claim.metric),
        "abbr": abbreviation(shown(s)),
        "a": nums.a,
        "b": nums.b,
        "w": text_w,
        "l": text_l,
        "delta": _num(abs(claim.diff), nums.digits),
        "diff": _num(claim.diff, nums.digits),
        "pts": f"{pts:.1f}",
        "pct": f"{pct:.1f}",
        "fold": f"{fold:.1f}",
        "a_pct": f"{s.mean * 100:.1f}",
        "b_pct": f"{r.mean * 100:.1f}",
        "n": str(s.n),
        "nb": str(r.n),
        "alpha": f"{claim.alpha:.2f}",
        "a_wrong": _wrong(s.mean, decimals_for(s.mean), avoid),
        "b_wrong": _wrong(r.mean, decimals_for(r.mean), avoid),
        "w_wrong": _wrong(w.mean, decimals_for(w.mean), avoid),
        "l_wrong": _wrong(lo.mean, decimals_for(lo.mean), avoid),
        "delta_wrong": _num(abs(claim.diff) * 2 + 10.0**-nums.digits * 5, nums.digits),
        "pts_wrong": f"{pts * 1.8 + 2:.1f}",
        "pct_wrong": f"{pct * 1.8 + 3:.1f}",
        "fold_wrong": f"{fold * 1.8 + 0.5:.1f}",
        "a_pct_wrong": f"{s.mean * 100 + (4.3 if s.mean < 0.9 else -4.3):.1f}",
        "b_pct_wrong": f"{r.mean * 100 + (4.3 if r.mean < 0.9 else -4.3):.1f}",
        "n_wrong": str(max(s.n, r.n) + 3),
        "fake_metric": metrics[seed % len(metrics)],
        "fake_group": groups[seed % len(groups)],
        "fake_key": ref.key,
    }
    if claim.p is not None and claim.log10_p is not None:
        out["p"] = format_p(claim.p, claim.log10_p)[0]
        out["pexpr"] = f"$p = {out['p']}$" if claim.p >= 1e-3 else "$p < 0.001$"
    for name in ("method", "baseline", "winner", "loser", "metric", "fake_group", "fake_metric"):
        out[_cap(name)] = _cap(out[name])
    return out


SLOT_NAMES = {
    *"method baseline winner loser metric abbr a b w l delta diff pts pct fold a_pct b_pct n nb".split(),
    *"alpha a_wrong b_wrong w_wrong l_wrong delta_wrong pts_wrong pct_wrong fold_wrong".split(),
    *"a_pct_wrong b_pct_wrong n_wrong fake_metric fake_group fake_key p pexpr".split(),
    *"Method Baseline Winner Loser Metric Fake_group Fake_metric".split(),
}


# Characters a phrasing's own words may hold that LaTeX reads as syntax ("{pct}%" would start a
# comment and cut the sentence); a backslash before one means the phrasing escaped it already.
# The rest of LaTeX's specials ($, &, ~, braces) are the tables' and citations' own syntax.
BARE_SPECIAL = re.compile(r"(?<!\\)([%#_])")


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with its slots filled (the values are LaTeX already) and its own words escaped."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in SLOT_NAMES:
            return values[name]
        if LATEX_ARGS.match(name):
            return m.group(0)
        raise KeyError(f"unknown slot {{{name}}}")

    out, at = [], 0
    for m in SLOT.finditer(text):
        out += [BARE_SPECIAL.sub(r"\\\1", text[at : m.start()]), one(m)]
        at = m.end()
    return "".join([*out, BARE_SPECIAL.sub(r"\\\1", text[at:])])


class Paper(NamedTuple):
    key: str
    dir: Path
    ledger: Ledger

    @property
    def names(self) -> set[str]:
        claims = self.ledger.claims
        return {x for c in claims for g in (c.subject, c.reference) for x in (g.label, shown(g))} | {
            n for c in claims for n in (c.metric, readable_metric(c.metric))
        }


class Variant(NamedTuple):
    half: str
    batch: str
    kind: str
    phrasing: int  # index within its kind in its corpus file
    paper: str
    claim: str
    placement: str
    text: str
    reference: Reference | None = None  # the .bib entry a fabricated citation comes with


def _candidates(papers: list[Paper], needs: set[str]) -> list[tuple[Paper, Claim]]:
    return [
        (p, c)
        for p in papers
        for c in p.ledger.claims
        if eligible(c, needs, p.ledger.headline.subject.label if p.ledger.headline else None)
    ]


def variants(half: Half, papers: list[Paper]) -> tuple[list[Variant], list[str]]:
    """Every phrasing of `half`, filled from the claims it fits: one variant per error phrasing,
    two per honest one. Also the phrasings that fit no claim of any paper."""
    out, unfilled = [], []
    for kind, spec in half.kinds.items():
        for i, phrasing in enumerate(spec.phrasings):
            pool = _candidates(papers, needs_of(kind, spec, phrasing))
            if not pool:
                unfilled.append(f"{kind}[{i}]")
                continue
            for copy in range(2 if kind == HONEST else 1):
                seed = _hash(half.half, kind, phrasing.text, copy)
                paper, claim = pool.pop(seed % len(pool))
                values = slots(claim, half.fakes, seed, paper.names)
                ref = half.fakes.references[seed % len(half.fakes.references)]
                out.append(
                    Variant(
                        half.half,
                        half.batch,
                        kind,
                        i,
                        paper.key,
                        claim.id,
                        PLACEMENTS[(seed >> 8) % len(PLACEMENTS)],
                        fill(phrasing.text, values),
                        ref if "fake_key" in SLOT.findall(phrasing.text) else None,
                    )
                )
                if not pool:
                    break
    return out, unfilled


def insert(tex: str, text: str, placement: str) -> str:
    """`text` as a paragraph of its own at `placement`."""
    block = f"\n\n{text}\n\n"
    end = tex.index("\\label{silvabodyend}")
    if placement == "after_heading":
        heads = list(re.finditer(r"\\section\{[^}]*\}(\\label\{[^}]*\})?\n", tex[:end]))
        at = heads[min(1, len(heads) - 1)].end() if heads else end
        return tex[:at] + block + tex[at:]
    if placement == "appendix":
        stop = tex.rindex("\\end{document}")
        lead = "" if "\\appendix" in tex[end:] else "\\appendix\n\\section{Additional results}\n"
        return tex[:stop] + lead + block + tex[stop:]
    return tex[:end] + block + tex[end:]


def with_reference(tex: str, bib: str, ref: Reference) -> tuple[str, str]:
    """The paper citing `ref` from a .bib entry of its own, with a bibliography if it had none."""
    fields = f"author = {{{ref.author}}},\n  title = {{{ref.title}}},\n  year = {{{ref.year}}}"
    entry = f"@article{{{ref.key},\n  {fields}\n}}\n"
    if "\\bibliography{" not in tex:
        at = tex.index("\\label{silvabodyend}") + len("\\label{silvabodyend}")
        tex = tex[:at] + "\n\\bibliographystyle{plainnat}\n\\bibliography{references}\n" + tex[at:]
    return tex, bib + entry


def run_examples(work: Path) -> list[Path]:
    """The three examples, offline and in-process, into `work/runs` (minutes on 2 cores)."""
    runs = []
    for folder, idea in EXAMPLES:
        src = work / (folder + ("-" + Path(idea).stem if idea else ""))
        shutil.copytree(ROOT / "examples" / folder, src)
        cfg = yaml.safe_load((src / "run.yaml").read_text())
        cfg.update(output_dir=str(work / "runs"), executor={"kind": "inprocess", "max_in_flight": 4})
        if idea:
            cfg.update(idea=idea, name=f"{cfg['name']}-{Path(idea).stem}".replace("_", "-"))
        cfg.pop("writeup", None)
        (src / "run.yaml").write_text(yaml.safe_dump(cfg))
        before = set((work / "runs").glob("*")) if (work / "runs").is_dir() else set()
        subprocess.run([sys.executable, "-m", "silva.cli.main", "run", "run.yaml"], cwd=src, check=True)
        (new,) = set((work / "runs").glob("*")) - before
        runs.append(new)
    return runs


def own_papers(runs: list[Path]) -> list[Paper]:
    from bench_claims import honest_paper

    papers = []
    for run_dir in runs:
        for writer in ("offline", "llm"):
            target, macros = honest_paper(run_dir, "welch", writer)
            papers.append(Paper(f"{run_dir.name}/{writer}", target, macros.ledger))
    return papers


def review(paper: Paper, variant: Variant, before: list[str]) -> list[str]:
    """The integrity check's new findings on `paper` with `variant` inserted (in a copy): those
    it did not already report on the unmodified paper (`before`), which are scored apart."""
    from bench_claims import findings

    target = paper.dir.parent / "variant"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(paper.dir, target)
    tex = insert((paper.dir / "paper.tex").read_text(), variant.text, variant.placement)
    if variant.reference is not None:
        bib = (target / "references.bib").read_text()
        tex, bib = with_reference(tex, bib, variant.reference)
        (target / "references.bib").write_text(bib)
    (target / "paper.tex").write_text(tex)
    try:
        return list((Counter(findings(target)) - Counter(before)).elements())
    finally:
        shutil.rmtree(target)


def _rate(hits: int, total: int) -> float | None:
    return round(hits / total, 3) if total else None


def _summary(kinds: dict[str, list[bool]]) -> dict[str, object]:
    errors = [x for k, xs in kinds.items() if k != HONEST for x in xs]
    honest = kinds.get(HONEST, [])
    return {
        "planted": len(errors),
        "found": sum(errors),
        "found_rate": _rate(sum(errors), len(errors)),
        "honest": len(honest),
        "honest_flagged": sum(honest),
        "honest_flagged_rate": _rate(sum(honest), len(honest)),
        "per_kind": {
            k: {"variants": len(xs), "flagged": sum(xs), "rate": _rate(sum(xs), len(xs))}
            for k, xs in sorted(kinds.items())
        },
    }


def group(v: Variant) -> str:
    """The variant's half, or "spent" for a held-out half already read while tuning."""
    return "spent" if v.half == "heldout" and v.batch in SPENT else v.half


def score(results: list[tuple[Variant, list[str]]]) -> dict[str, object]:
    """Per group (tune, spent, heldout; all batches together), and the same figures per batch under
    `per_batch`, so that a batch's held-out share can be quoted on its own."""
    per: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    batches: dict[str, dict[str, dict[str, list[bool]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for v, found in results:
        per[group(v)][v.kind].append(bool(found))
        batches[group(v)][v.batch][v.kind].append(bool(found))
    return {
        half: {**_summary(kinds), "per_batch": {b: _summary(k) for b, k in sorted(batches[half].items())}}
        for half, kinds in per.items()
    }


def table(result: dict[str, object]) -> str:
    """Each group, in all and per batch: planted errors found and honest paraphrases flagged."""
    rows = [f"{'half':<8} {'batch':<5} {'found':>12} {'rate':>6} {'flagged':>12} {'rate':>6}"]
    for half in GROUPS:
        if not isinstance(got := result.get(half), dict):
            continue
        for batch, s in [("all", got), *sorted(got["per_batch"].items())]:
            found, flagged = f"{s['found']}/{s['planted']}", f"{s['honest_flagged']}/{s['honest']}"
            rate_f, rate_h = s["found_rate"], s["honest_flagged_rate"]
            rows.append(f"{half:<8} {batch:<5} {found:>12} {rate_f!s:>6} {flagged:>12} {rate_h!s:>6}")
    return "\n".join(rows)


def _examples(results: list[tuple[Variant, list[str]]], limit: int = 200) -> dict[str, list[dict[str, str]]]:
    """Misses and false flags of the tune and spent halves, for whoever tunes the checker; the
    untouched held-out batches' texts stay out of the results so that nobody tunes on them by
    reading this file."""
    missed = [
        {
            "kind": v.kind,
            "half": group(v),
            "paper": v.paper,
            "claim": v.claim,
            "placement": v.placement,
            "text": v.text,
        }
        for v, found in results
        if group(v) != "heldout" and v.kind != HONEST and not found
    ]
    flagged = [
        {
            "half": group(v),
            "paper": v.paper,
            "claim": v.claim,
            "placement": v.placement,
            "text": v.text,
            "findings": "; ".join(f),
        }
        for v, f in results
        if group(v) != "heldout" and v.kind == HONEST and f
    ]
    return {"tune_missed": missed[:limit], "tune_honest_flagged": flagged[:limit]}


PARITIES = ("all", "odd", "even")


def picked(v: Variant, parity: str) -> bool:
    """Whether `v` is in the chosen phrasings: "odd" or "even" keeps the phrasings of that index
    within their kind, so that one can tune on one share of a half and measure on the other."""
    return parity == "all" or v.phrasing % 2 == (parity == "odd")


def bench(
    runs: list[Path],
    halves: tuple[str, ...] = HALVES,
    batches: tuple[str, ...] | None = None,
    parity: str = "all",
) -> dict[str, object]:
    from bench_claims import findings

    started = time.monotonic()
    papers = own_papers(runs)
    built = time.monotonic()
    own = {p.key: findings(p.dir) for p in papers}
    by_key = {p.key: p for p in papers}
    results, unfilled, placements = [], {}, defaultdict[str, int](int)
    for half in (h for name in halves for h in load_batches(name, batches=batches)):
        made, unfilled[_stem(half)] = variants(half, papers)
        for v in (v for v in made if picked(v, parity)):
            placements[v.placement] += 1
            results.append((v, review(by_key[v.paper], v, own[v.paper])))
    reviewed = time.monotonic()
    return {
        "papers": sorted(own),
        "variants": len(results),
        "honest_share": _rate(sum(v.kind == HONEST for v, _ in results), len(results)),
        "placements": dict(placements),
        "own_paper_findings": {k: len(v) for k, v in own.items()},
        "own_paper_finding_texts": {k: v for k, v in own.items() if v},
        **score(results),
        "unfilled_phrasings": unfilled,
        **_examples(results),
        "papers_s": round(built - started, 1),
        "review_s": round(reviewed - built, 1),
        "review_ms_per_variant": round(1000 * (reviewed - built) / max(1, len(results) + len(own)), 1),
    }


def _stem(half: Half) -> str:
    return half.half if half.batch == "a" else f"{half.half}_{half.batch}"


def dry_run(
    runs: list[Path], halves: tuple[str, ...] = HALVES, batches: tuple[str, ...] | None = None
) -> dict[str, object]:
    """Every phrasing of every batch (or of `batches`) filled from the runs' papers, nothing reviewed."""
    papers = own_papers(runs)
    return {"papers": sorted(p.key for p in papers), **fill_counts(papers, halves, batches=batches)}


def fill_counts(
    papers: list[Paper],
    halves: tuple[str, ...] = HALVES,
    corpus: Path = CORPUS,
    batches: tuple[str, ...] | None = None,
) -> dict[str, object]:
    """Per corpus file and kind, how many phrasings and variants there are, and the phrasings that
    fit no claim of `papers` (with their text, to fix their needs)."""
    out: dict[str, object] = {}
    for half in (h for name in halves for h in load_batches(name, corpus, batches)):
        made, unfilled = variants(half, papers)
        made_per = Counter(v.kind for v in made)
        out[_stem(half)] = {
            "per_kind": {
                k: {"phrasings": len(spec.phrasings), "variants": made_per[k]}
                for k, spec in half.kinds.items()
            },
            "unfilled_phrasings": [f"{u}: {_phrasing(half, u).text}" for u in unfilled],
        }
    return out


def _phrasing(half: Half, ref: str) -> Phrasing:
    kind, _, index = ref.partition("[")
    return half.kinds[kind].phrasings[int(index.rstrip("]"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--runs", nargs="*", type=Path, help="finished run directories (default: run the examples)"
    )
    ap.add_argument("--halves", nargs="*", default=list(HALVES), choices=HALVES)
    ap.add_argument("--batches", nargs="*", help="only these batches (a, b...; default: every batch)")
    ap.add_argument(
        "--phrasings",
        default="all",
        choices=PARITIES,
        help="only the odd- or even-indexed phrasings of each kind (a split of a half of one's own)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "claims_wording.json")
    ap.add_argument(
        "--dry-run", action="store_true", help="fill and count the variants, review none, write nothing"
    )
    args = ap.parse_args(argv)
    batches = tuple(args.batches) if args.batches is not None else None
    with tempfile.TemporaryDirectory(prefix="silva-bench-wording-") as tmp:
        runs = args.runs or run_examples(Path(tmp))
        if args.runs:  # never write into the given runs: work on copies
            runs = []
            for r in args.runs:
                shutil.copytree(r, Path(tmp) / r.name, ignore=shutil.ignore_patterns("paper"))
                runs.append(Path(tmp) / r.name)
        if args.dry_run:
            print(json.dumps(dry_run(runs, tuple(args.halves), batches), indent=2))
            return 0
        result = bench(runs, tuple(args.halves), batches, args.phrasings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    shown = ("tune_missed", "tune_honest_flagged", "own_paper_finding_texts")
    print(json.dumps({k: v for k, v in result.items() if k not in shown}, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
