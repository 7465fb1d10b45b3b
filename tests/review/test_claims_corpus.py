"""The claims-wording corpus (bench/claims_corpus): it loads, meets its size, kind and split
rules, and every phrasing fills from a claim ledger into a variant that is wrong (or true) by
construction. The benchmark itself (bench/bench_claims_wording.py) reviews the variants."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from engine.claims import Claim, GroupSummary, Ledger, verdict
from tests.helpers import load_file

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_claims_wording.py"
CORPUS = BENCH.parent / "claims_corpus"
FILES = sorted(p.stem for p in CORPUS.glob("*.yaml"))
BATCHES = sorted({s.partition("_")[2] or "a" for s in FILES})


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    # Registered so that pydantic resolves the module's postponed annotations.
    module = load_file(BENCH, "bench_claims_wording")
    sys.modules.setdefault("bench_claims_wording", module)
    module.Half.model_rebuild(_types_namespace=vars(module))
    return module


def _claim(cid: str, metric: str, role: str, a: float, b: float, p: float, n: int = 3) -> Claim:
    sa = GroupSummary(
        label="improve n0020 (best of agenda)", name="small-loss filtering", n=n, mean=a, sd=0.01
    )
    sb = GroupSummary(label="tuned baseline (best of hyperparameter)", n=n, mean=b, sd=0.01)
    return Claim.model_validate(
        dict(
            id=cid, stage="agenda", metric=metric, direction="maximize", role=role, subject=sa,
            reference=sb, diff=a - b, p=p, log10_p=math.log10(p), test="welch",
            verdict=verdict(a - b, p, "maximize"),
        )
    )  # fmt: skip


def ledger() -> Ledger:
    """One claim of every shape a phrasing can need."""
    return Ledger(
        idea="label-noise",
        headline_id="agenda-AvsB-test-accuracy",
        claims=[
            _claim("agenda-AvsB-val-accuracy", "val_accuracy", "selection", 0.912, 0.861, 0.0004),
            _claim("agenda-AvsB-test-accuracy", "test_accuracy", "test", 0.884, 0.879, 0.41),
            _claim("agenda-AvsC-test-accuracy", "test_accuracy", "test", 0.842, 0.897, 0.003),
            _claim("agenda-AvsB-clean-fraction", "clean_fraction_kept", "other", 0.71, 0.70, 0.6),
            _claim("agenda-AvsD-val-accuracy", "val_accuracy", "selection", 0.851, 0.849, 0.7),
            _claim("agenda-AvsD-test-accuracy", "test_accuracy", "test", 0.931, 0.879, 0.001),
        ],
    )


def test_the_corpus_meets_its_size_kind_and_share_rules(bench: ModuleType) -> None:
    halves = [bench.load_half(h) for h in bench.HALVES]
    assert [h.half for h in halves] == list(bench.HALVES)
    kinds = {*bench.ERROR_KINDS, bench.HONEST}
    assert all(set(h.kinds) == kinds for h in halves)
    count = {k: sum(len(h.kinds[k].phrasings) for h in halves) for k in kinds}
    assert min(count[k] for k in bench.ERROR_KINDS) >= 30
    errors, honest = sum(count[k] for k in bench.ERROR_KINDS), 2 * count[bench.HONEST]
    assert errors + honest >= 300 and honest * 3 >= errors + honest
    for kind in kinds:
        texts = [p.text for h in halves for p in h.kinds[kind].phrasings]
        assert len(texts) == len(set(texts)), f"a phrasing of {kind} appears twice"


def test_every_later_batch_meets_its_size_rules(bench: ModuleType) -> None:
    for batch in BATCHES[1:]:
        halves = [bench.load_half(f"{h}_{batch}") for h in bench.HALVES]
        assert [(h.half, h.batch) for h in halves] == [(h, batch) for h in bench.HALVES]
        assert all(set(h.kinds) == {*bench.ERROR_KINDS, bench.HONEST} for h in halves)
        count = {k: sum(len(h.kinds[k].phrasings) for h in halves) for k in halves[0].kinds}
        assert min(count[k] for k in bench.ERROR_KINDS) >= 24 and count[bench.HONEST] >= 80, batch


def test_a_half_is_every_batch_of_it(bench: ModuleType) -> None:
    for half in bench.HALVES:
        assert [h.batch for h in bench.load_batches(half)] == BATCHES
        assert all(h.half == half for h in bench.load_batches(half))


def test_results_report_each_half_per_batch_and_spent_held_out_halves_apart(bench: ModuleType) -> None:
    def variant(half: str, batch: str, kind: str) -> object:
        return bench.Variant(half, batch, kind, 0, "toy", "c", "body_end", "text")

    fresh = next(b for b in BATCHES if b not in bench.SPENT)
    results = [
        (variant("heldout", "a", "wrong_number"), ["a finding"]),
        (variant("heldout", fresh, "wrong_number"), []),
        (variant("heldout", fresh, "honest"), ["a false flag"]),
        (variant("tune", "b", "honest"), []),
    ]
    out = bench.score(results)
    # a held-out half read while tuning is "spent", never counted with the untouched ones
    assert (out["heldout"]["planted"], out["heldout"]["found"], out["heldout"]["honest_flagged"]) == (1, 0, 1)
    assert set(out["heldout"]["per_batch"]) == {fresh}
    assert (out["spent"]["planted"], out["spent"]["found"]) == (1, 1)
    assert set(out["tune"]["per_batch"]) == {"b"}
    rows = bench.table(out).splitlines()[1:]
    assert [r.split()[:4] for r in rows] == [
        ["tune", "all", "0/0", "None"],
        ["tune", "b", "0/0", "None"],
        ["spent", "all", "1/1", "1.0"],
        ["spent", "a", "1/1", "1.0"],
        ["heldout", "all", "0/1", "0.0"],
        ["heldout", fresh, "0/1", "0.0"],
    ]


@pytest.mark.parametrize("stem", [s for s in FILES if s.startswith("tune")])
def test_the_halves_follow_the_stated_split_rule(bench: ModuleType, stem: str) -> None:
    tune, heldout = bench.load_half(stem), bench.load_half(stem.replace("tune", "heldout"))
    groups: list[tuple[str, list[str], list[str]]] = [
        (k, [p.text for p in tune.kinds[k].phrasings], [p.text for p in heldout.kinds[k].phrasings])
        for k in tune.kinds
    ]
    groups += [("fakes.metrics", tune.fakes.metrics, heldout.fakes.metrics)]
    groups += [("fakes.groups", tune.fakes.groups, heldout.fakes.groups)]
    groups += [
        (
            "fakes.references",
            [r.key for r in tune.fakes.references],
            [r.key for r in heldout.fakes.references],
        )
    ]
    for kind, first, second in groups:
        order = sorted(first + second, key=lambda t: bench.split_key(kind, t))
        cut = math.ceil(len(order) / 2)
        assert (set(order[:cut]), set(order[cut:])) == (set(first), set(second)), kind


@pytest.mark.parametrize("half", FILES)
def test_every_phrasing_fills_from_a_ledger(bench: ModuleType, half: str, tmp_path: Path) -> None:
    paper = bench.Paper("toy/offline", tmp_path, ledger())
    made, unfilled = bench.variants(bench.load_half(half), [paper])
    assert unfilled == []
    left = [v.text for v in made if any(f"{{{name}}}" in v.text for name in bench.SLOT_NAMES)]
    assert left == []
    wrong = [v for v in made if v.kind == "inverted_comparison"]
    assert wrong and all(paper.ledger.get(v.claim).verdict in ("better", "worse") for v in wrong)
    null = [v for v in made if v.kind == "significance_at_p_over_alpha"]
    assert null and all(paper.ledger.get(v.claim).verdict == "no detectable difference" for v in null)
    cited = [v for v in made if v.kind == "fabricated_reference"]
    assert cited and all(v.reference is not None and v.reference.key in v.text for v in cited)


def test_wrong_values_differ_from_the_true_ones_as_printed(bench: ModuleType) -> None:
    claim = ledger().claims[0]
    half = bench.load_half("tune")
    values = bench.slots(claim, half.fakes, 7, {"val_accuracy"})
    assert (values["a"], values["b"], values["pct"], values["pts"]) == ("0.912", "0.861", "5.9", "5.1")
    assert (values["Method"], values["abbr"]) == ("Small-loss filtering", "SLF")  # the readable name
    assert values["a_wrong"] not in (values["a"], values["b"])
    assert values["b_wrong"] not in (values["a"], values["b"])
    assert values["pct_wrong"] != values["pct"] and values["pts_wrong"] != values["pts"]
    assert values["n_wrong"] != values["n"] and values["fold_wrong"] != values["fold"]
    assert values["fake_metric"].lower() not in {"val_accuracy", "validation accuracy"}


def test_a_phrasings_own_percent_sign_is_escaped_not_a_latex_comment(bench: ModuleType) -> None:
    values = {"pct": "4.2", "fake_key": "lee2021"}
    assert bench.fill("Up {pct}% on run_3 (#2).", values) == r"Up 4.2\% on run\_3 (\#2)."
    # LaTeX the phrasing writes itself stays as it is: an escaped sign, a citation, a table row.
    assert bench.fill(r"{pct}\% \cite{{fake_key}} & x \\", values) == r"4.2\% \cite{lee2021} & x \\"


def test_a_dry_run_counts_variants_and_names_the_phrasings_that_fit_nothing(
    bench: ModuleType, tmp_path: Path
) -> None:
    paper = bench.Paper("toy/offline", tmp_path, ledger())
    counts = bench.fill_counts([paper])
    assert set(counts) == set(FILES)
    half = bench.load_half("tune")
    made, _ = bench.variants(half, [paper])
    assert counts["tune"]["per_kind"] == {
        k: {"phrasings": len(spec.phrasings), "variants": sum(v.kind == k for v in made)}
        for k, spec in half.kinds.items()
    }
    assert all(c["unfilled_phrasings"] == [] for c in counts.values())
    significant_only = ledger()
    significant_only.claims = [c for c in significant_only.claims if c.verdict != "no detectable difference"]
    unfilled = bench.fill_counts([bench.Paper("toy/offline", tmp_path, significant_only)], ("tune",))
    assert unfilled["tune"]["per_kind"]["false_comparison"]["variants"] == 0
    assert unfilled["tune"]["unfilled_phrasings"][0].startswith("false_comparison[0]: ")


def test_a_bench_run_may_keep_some_batches_and_one_parity_of_phrasings(bench: ModuleType) -> None:
    # Only the named batches' files are read; "odd"/"even" split each kind's phrasings by index.
    assert [h.batch for h in bench.load_batches("tune", batches=("b",))] == ["b"] * ("b" in BATCHES)
    assert [h.batch for h in bench.load_batches("tune", batches=())] == []
    v = bench.Variant("tune", "a", "honest", 3, "p", "c", "body_end", "text")
    assert bench.picked(v, "odd") and bench.picked(v, "all") and not bench.picked(v, "even")
    assert bench.picked(v._replace(phrasing=4), "even")
