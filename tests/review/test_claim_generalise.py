"""The claim checker on structures that new writers used and the checker had not met: a comparing
word in a copula's subject, passives without an agent, hedges and denials in other words,
abbreviations defined without parentheses, figures given in percent or in parallel, infinitives
and modifiers that are no side of a comparison. Each test is one general cause, in sentences
written for the test, on a small ledger: attention pooling is significantly worse than the tuned
baseline and level with its ablation; the tuned baseline is significantly better than the
untuned one."""

from __future__ import annotations

import pytest

from engine.claimnumbers import fits, literals
from engine.claims import Claim, GroupSummary, Ledger
from engine.claimtext import check_text


def _group(label: str, name: str, mean: float) -> GroupSummary:
    return GroupSummary(label=label, name=name, n=5, mean=mean, sd=0.004)


POOL = _group("improve n0031 (best of agenda)", "attention pooling", 0.812)
TUNED = _group("tuned: lr=0.3 (best of hyperparameter)", "tuned baseline", 0.845)
DRAFT = _group("draft n0000 (best of preliminary)", "baseline", 0.790)
CUT = _group("ablation: no_pool (best of ablation)", "no pooling ablation", 0.815)


def _claim(cid: str, a: GroupSummary, b: GroupSummary, p: float) -> Claim:
    diff = a.mean - b.mean
    significant = p < 0.05
    return Claim(
        id=cid, stage=cid.split("-")[0], metric="test_accuracy", direction="maximize", role="test",
        subject=a, reference=b, diff=diff, diff_ci=(diff - 0.01, diff + 0.01), test="welch",
        statistic=2.5, df=7.1, p=p, log10_p=-3.5 if significant else -0.57, effect=1.9,
        verdict=("worse" if diff < 0 else "better") if significant else "no detectable difference",
        headline=cid == "agenda-test",
    )  # fmt: skip


@pytest.fixture
def ledger() -> Ledger:
    return Ledger(
        idea="pooling",
        headline_id="agenda-test",
        claims=[
            _claim("agenda-test", POOL, TUNED, 3e-4),
            _claim("ablation-test", CUT, POOL, 0.27),
            _claim("hyperparameter-test", TUNED, DRAFT, 1e-3),
        ],
    )


def _problems(text: str, ledger: Ledger) -> list[str]:
    return [p for c in check_text(text, ledger) for p in c.problems]


def test_a_comparing_word_in_a_copulas_subject_is_said_of_the_group_after_it(ledger: Ledger) -> None:
    pair = "Of attention pooling and the tuned baseline, the stronger one on test accuracy is {}."
    assert any("states" in p for p in _problems(pair.format("attention pooling"), ledger))
    assert _problems(pair.format("the tuned baseline"), ledger) == []
    what = "What scores best on test accuracy is the tuned baseline, not attention pooling."
    assert _problems(what, ledger) == []


def test_the_word_baseline_is_the_group_called_so(ledger: Ledger) -> None:
    # The headline's reference is the tuned baseline, but a group is called just "baseline".
    assert _problems("On test accuracy, the baseline averages 0.790.", ledger) == []
    assert any("0.845" in p for p in _problems("On test accuracy, the baseline averages 0.845.", ledger))


def test_a_role_word_with_someone_elses_name_after_it_is_another_system(ledger: Ledger) -> None:
    other = "On test accuracy the tuned baseline beats the method of Moreau et al. by a wide margin."
    assert any("no group of the run" in p for p in _problems(other, ledger))
    assert _problems("Our method of Section 2 trails the tuned baseline on test accuracy.", ledger) == []


@pytest.mark.parametrize(
    "sentence",
    [
        # hedges in other words: only the means' order is checked
        "The no pooling ablation edges past attention pooling on test accuracy, a gap within run-to-run "
        "noise.",
        "The no pooling ablation edges past attention pooling (0.815 vs. 0.812) without reaching "
        "significance.",
        # what one group lacks to reach the other
        "Attention pooling would have to gain 0.033 to match the tuned baseline on test accuracy.",
        # a passive without its agent: the subject lost
        "Attention pooling is outperformed on test accuracy, the tuned baseline being clearly ahead.",
        # a p-value compared with its threshold, and the size of the experiment, compare no groups
        "The p-value of 0.27 exceeds 0.05, so attention pooling and the no pooling ablation do not differ "
        "significantly on test accuracy.",
        "A larger number of seeds would be needed to separate the no pooling ablation from attention "
        "pooling.",
        # a denial covers the significance said after its verb, and a judgement called premature
        "We do not see the no pooling ablation beating attention pooling significantly on test accuracy.",
        "It would be premature to call the no pooling ablation better than attention pooling on test "
        "accuracy.",
        # an infinitive after "to" and the modifiers of a comparing noun are no sides
        "The test fails to reject equal means for the no pooling ablation and attention pooling (p = 0.27).",
        "The apparent edge of the no pooling ablation (0.815 vs. 0.812) is no real improvement (p = 0.27).",
    ],
)
def test_an_honest_sentence_in_these_structures_is_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "The tuned baseline would have to gain 0.033 to match attention pooling on test accuracy.",
        "The tuned baseline is outperformed on test accuracy, attention pooling being clearly ahead.",
        # significance said in other words, with no direction to check
        "The difference between the no pooling ablation and attention pooling is not due to chance.",
        "The difference between the no pooling ablation and attention pooling lies beyond chance.",
    ],
)
def test_a_false_sentence_in_these_structures_is_found(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger), sentence


@pytest.mark.parametrize(
    "definition",
    [
        "We call the no pooling ablation NPA for short.",
        "With NPA short for the no pooling ablation, we compare it with attention pooling.",
    ],
)
def test_an_abbreviation_defined_without_parentheses_names_its_group(definition: str, ledger: Ledger) -> None:
    both = f"{definition} NPA reaches 0.815 on test accuracy, attention pooling 0.812."
    assert _problems(both, ledger) == []
    assert _problems(f"{definition} NPA is on par with attention pooling (p = 0.27).", ledger) == []
    assert any("gives" in p for p in _problems(f"{definition} NPA reaches 0.812 on test accuracy.", ledger))


def test_figures_given_as_a_distance_in_percent_or_in_parallel_are_read_as_such(ledger: Ledger) -> None:
    apart = "The no pooling ablation and attention pooling are {} apart on test accuracy."
    assert _problems(apart.format("0.003"), ledger) == []
    assert _problems(apart.format("0.030"), ledger)
    pct = "In percent, test accuracy is {} for the no pooling ablation and {} for attention pooling."
    assert _problems(pct.format("81.5", "81.2"), ledger) == []
    assert _problems(pct.format("81.2", "81.5"), ledger)
    both = "Attention pooling does not help: test accuracy is {} with it and {} with the tuned baseline."
    assert _problems(both.format("0.812", "0.845"), ledger) == []
    assert _problems(both.format("0.845", "0.812"), ledger)


def test_a_count_of_errors_compared_may_be_a_ratio_without_its_x(ledger: Ledger) -> None:
    # (1 - 0.812) / (1 - 0.845) = 1.21
    assert _problems("The tuned baseline makes 1.2 fewer errors than attention pooling.", ledger) == []
    assert _problems("The tuned baseline makes 3.5 fewer errors than attention pooling.", ledger)


@pytest.mark.parametrize(
    "sentence",
    [
        # a measure named by a head noun, or a known measure with a modifier the run does not have
        "Attention pooling has a lower energy consumption than the tuned baseline.",
        "On out-of-distribution accuracy, attention pooling trails the tuned baseline.",
        "On memory footprint, the two configurations are level.",
        # significance in other words
        "Our test rejects the hypothesis of equal means for attention pooling and the no pooling ablation.",
        "The test detects a clear difference between the no pooling ablation and attention pooling.",
        "The no pooling ablation differs from attention pooling on test accuracy at the 0.05 level.",
        "Statistical testing (p = 0.27) confirms that the no pooling ablation outperforms attention pooling.",
        # a level reached or passed, an upper hand, a match denied
        "The tuned baseline fails to reach the test accuracy of attention pooling.",
        "Attention pooling lifts test accuracy above the level of the tuned baseline.",
        "The no pooling ablation has the upper hand over attention pooling on test accuracy.",
        "We do not observe the tuned baseline matching attention pooling on test accuracy.",
        # a system the run lacks, in a ranking, a comparison noun, a swap, a "noise of", an "of ... is"
        "Label propagation comes close to attention pooling but does not match it.",
        "Label propagation averages 0.83 on test accuracy.",
        "Ranking on test accuracy: the tuned baseline, then label propagation, then attention pooling.",
        "A comparison with label propagation, run on the same seeds, confirms the lead of the tuned "
        "baseline.",
        "Replacing attention pooling with label propagation lengthens training.",
        "Attention pooling is within noise of label propagation on test accuracy.",
        "The mean test accuracy of label propagation is 0.83.",
        # a count of replicates in other words
        "Each configuration was repeated 7 times with different seeds.",
        "All figures are means of 7 independent runs.",
        # one group named, one value stated of it
        "The strongest configuration, the tuned baseline, averages 0.812.",
    ],
)
def test_a_false_statement_in_other_words_is_found(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "On mean test accuracy, attention pooling trails the tuned baseline.",
        "Attention pooling lowers accuracy relative to the tuned baseline.",  # a verb, no modifier
        "The no pooling ablation ties with attention pooling at the 0.05 level.",
        "The test does not detect a difference between the no pooling ablation and attention pooling.",
        "Attention pooling fails to reach the test accuracy of the tuned baseline.",
        "We do not observe attention pooling matching the tuned baseline on test accuracy.",
        "Ranking on test accuracy: the tuned baseline, then the no pooling ablation, then attention pooling.",
        "Replacing attention pooling with the tuned baseline raises test accuracy.",
        "The mean test accuracy of attention pooling is 0.812.",
        "All figures are means of 5 independent runs.",
        "The strongest configuration, the tuned baseline, averages 0.845.",
    ],
)
def test_the_true_counterpart_is_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


def test_a_figure_given_as_p_is_a_p_value_only(ledger: Ledger) -> None:
    cut = ledger.get("ablation-test")
    assert cut is not None and cut.diff_ci is not None
    bound = f"{cut.diff_ci[1]:.3f}"  # a bound of the interval, not the p-value
    assert fits(literals(bound)[0], cut)
    assert not fits(literals(f"p = {bound}")[0], cut)
    assert fits(literals("p = 0.27")[0], cut)


def test_an_action_a_cleft_and_training_time_are_read_as_such(ledger: Ledger) -> None:
    # a gerund of change acting on the method changes no quantity
    drop = "Dropping the pooling layer (the no pooling ablation) leaves test accuracy at 0.815 against 0.812."
    assert _problems(drop, ledger) == []
    # in a cleft sentence the "that" clause is no side
    cleft = "It is the tuned baseline, not attention pooling, that generalises better to the test set."
    assert _problems(cleft, ledger) == []
    # "training time" is how a paper writes train_time_s
    timed = _claim("agenda-time", POOL, TUNED, 0.27).model_copy(update={"metric": "train_time_s"})
    both = ledger.model_copy(update={"claims": [*ledger.claims, timed]})
    assert _problems("Training time is similar for attention pooling and the tuned baseline.", both) == []
