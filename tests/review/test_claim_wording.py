"""Claims checked whatever the wording: comparisons read by structure, names and abbreviations
resolved, every number against its own group, tables by row and column, metrics resolved. Each
test is one cause a wording-independent reviewer found in the checker that read only a list of
words, exact labels and decimals not followed by a full stop. Unit tests on a small ledger."""

from __future__ import annotations

import pytest

from engine.claims import Claim, GroupSummary, Ledger
from engine.claimtext import check_text

RFF = "random Fourier features (best of agenda)"
TUNED = "tuned baseline (best of hyperparameter)"
ABL = "ablation: no_rff (best of ablation)"


def _claim(
    cid: str, metric: str, role: str, a: tuple[str, str, float], b: tuple[str, str, float], p: float
) -> Claim:
    (la, na, ma), (lb, nb, mb) = a, b
    diff = ma - mb
    return Claim(
        id=cid,
        stage=cid.split("-")[0],
        metric=metric,
        direction="maximize",
        role=role,
        subject=GroupSummary(label=la, name=na, n=3, mean=ma, sd=0.005),
        reference=GroupSummary(label=lb, name=nb, n=3, mean=mb, sd=0.006),
        diff=diff,
        diff_ci=(diff - 0.01, diff + 0.01),
        test="welch",
        statistic=-18.1,
        df=3.7,
        p=p,
        log10_p=-4.0 if p < 0.05 else -0.1,
        effect=-11.9,
        effect_ci=(-18.7, -5.0),
        verdict="worse" if p < 0.05 and diff < 0 else "better" if p < 0.05 else "no detectable difference",
        headline=cid == "agenda-test",
    )


@pytest.fixture
def ledger() -> Ledger:
    rff, tuned, abl = (
        (RFF, "random Fourier features", 0.890),
        (TUNED, "tuned baseline", 0.962),
        (ABL, "no rff ablation", 0.894),
    )
    return Ledger(
        idea="rff",
        headline_id="agenda-test",
        claims=[
            _claim("agenda-test", "test_accuracy", "test", rff, tuned, 1e-4),
            _claim(
                "agenda-val",
                "val_accuracy",
                "selection",
                (RFF, rff[1], 0.910),
                (TUNED, tuned[1], 0.961),
                7e-4,
            ),
            _claim("ablation-test", "test_accuracy", "test", abl, rff, 0.62),
        ],
    )


def _problems(text: str, ledger: Ledger) -> list[str]:
    return [p for c in check_text(text, ledger) for p in c.problems]


@pytest.mark.parametrize(
    "sentence",
    [
        "Random Fourier features edges out the tuned baseline on test accuracy.",
        "Random Fourier features are more accurate than the tuned baseline on test accuracy.",
        "On test accuracy, random Fourier features hold an advantage of 7.2 points over the tuned baseline.",
        "The tuned baseline trails random Fourier features on test accuracy.",
        "The tuned baseline is outperformed by random Fourier features on test accuracy.",
        "Compared with random Fourier features, the tuned baseline is clearly worse on test accuracy.",
        "On test accuracy there is no meaningful difference between random Fourier features and the "
        "tuned baseline.",
        "Random Fourier features rank first, ahead of the tuned baseline, on test accuracy.",
    ],
)
def test_false_comparison_is_found_whatever_its_words(sentence: str, ledger: Ledger) -> None:
    # The ledger: random Fourier features are significantly WORSE than the tuned baseline.
    assert any("states" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "The tuned baseline edges out random Fourier features on test accuracy (0.962 vs. 0.890).",
        "Random Fourier features were significantly less accurate than the tuned baseline on test accuracy.",
        "On test accuracy, RFF trails the tuned baseline by 7.2 points.",
        "The no rff ablation and random Fourier features show no meaningful difference on test accuracy "
        "(0.894 vs. 0.890; p = 0.62).",
        "The no rff ablation scores slightly higher than RFF on test accuracy, though not significantly.",
        "Relative to the tuned baseline, RFF's test accuracy is 7.5% lower.",
    ],
)
def test_honest_paraphrases_are_left_alone(sentence: str, ledger: Ledger) -> None:
    text = "We call our method random Fourier features (RFF). " + sentence
    assert _problems(text, ledger) == [], sentence


def test_abbreviation_and_capitalised_label_resolve_to_their_group(ledger: Ledger) -> None:
    text = "We study random Fourier features (RFF). On test accuracy, RFF outperforms the tuned baseline."
    (check,) = [c for c in check_text(text, ledger) if c.problems]
    assert check.claim is not None and check.claim.id == "agenda-test"
    capitalised = "Tuned baseline (best of hyperparameter) beats random Fourier features (best of agenda)."
    assert _problems(capitalised, ledger) == []


def test_comparison_with_a_group_the_run_lacks_is_a_finding(ledger: Ledger) -> None:
    found = _problems("On test accuracy, random Fourier features beat a ResNet-18 baseline.", ledger)
    assert any("which is no group of the run" in p for p in found)


def test_numbers_at_any_position_each_against_its_own_group(ledger: Ledger) -> None:
    # A wrong mean before the full stop, a mean moved to the other group, a wrong seed count.
    assert any(
        "0.912" in p for p in _problems("Random Fourier features reach a test accuracy of 0.912.", ledger)
    )
    moved = _problems("On test accuracy, random Fourier features reach 0.962.", ledger)
    assert any("the figure 0.962 of" in p for p in moved)
    assert any("6 seeds" in p for p in _problems("All results are means over 6 seeds.", ledger))


def test_relative_change_must_equal_the_claims_relative_difference(ledger: Ledger) -> None:
    # 0.890 against 0.962: 7.5% lower (relative), 7.2 points; 12% is neither.
    wrong = "Relative to the tuned baseline, random Fourier features' test accuracy is 12% lower."
    assert any("12%" in p for p in _problems(wrong, ledger))


def test_table_cell_checked_against_its_row_group_and_column_metric(ledger: Ledger) -> None:
    table = (
        "Group & Test accuracy & AUROC \n"
        f"{RFF} & 0.962 & 0.890 \n"
        f"{TUNED} & 0.962 & 0.961 \n"
        "a random forest & 0.950 & 0.940 \n"
    )
    found = _problems(table, ledger)
    assert any(f"gives {RFF} the figure 0.962" in p for p in found)
    assert any("AUROC, a metric the run did not measure" in p for p in found)
    assert any("row 'a random forest' names no group" in p for p in found)


def test_selection_metric_as_held_out_in_any_sentence_and_unmeasured_metric(ledger: Ledger) -> None:
    # 0.910 is random Fourier features' val_accuracy (the selection metric), not a test figure.
    assert _problems("On the held-out test set, random Fourier features reach 0.910.", ledger)
    assert any(
        "a metric the run did not measure" in p
        for p in _problems("The recall of random Fourier features is 0.890.", ledger)
    )


def test_a_ledger_without_claims_names_no_group() -> None:
    # A failure report's ledger: nothing to compare, nothing to resolve, no crash.
    text = "Random Fourier features beat the baseline (0.93 vs. 0.91). Over 3 seeds."
    assert check_text(text, Ledger(idea="none")) == []
