"""The claim checker reads a comparison by its structure, not by the words of one phrase bank:
each test is one general cause of a miss or of an honest sentence flagged, with sentences written
for the test. Unit tests on a two-claim ledger: a significant loss and a null result."""

from __future__ import annotations

import pytest

from engine.claims import Claim, GroupSummary, Ledger
from engine.claimtext import check_text, plain

MIX = GroupSummary(label="improve n0012 (best of agenda)", name="mixup training", n=4, mean=0.781, sd=0.004)
PLAIN = GroupSummary(label="baseline (draft n0000)", name="plain training", n=4, mean=0.835, sd=0.005)
CUT = GroupSummary(
    label="ablation: no_mix (best of ablation)", name="no mixing ablation", n=4, mean=0.784, sd=0.006
)


def _claim(cid: str, metric: str, role: str, a: GroupSummary, b: GroupSummary, p: float) -> Claim:
    diff = a.mean - b.mean
    significant = p < 0.05
    return Claim(
        id=cid, stage=cid.split("-")[0], metric=metric, direction="maximize", role=role,
        subject=a, reference=b, diff=diff, diff_ci=(diff - 0.01, diff + 0.01), test="welch",
        statistic=-3.1, df=5.6, p=p, log10_p=-4.0 if significant else -0.6, effect=-2.2,
        verdict=("worse" if diff < 0 else "better") if significant else "no detectable difference",
        headline=cid == "agenda-test",
    )  # fmt: skip


@pytest.fixture
def ledger() -> Ledger:
    return Ledger(
        idea="mixup",
        headline_id="agenda-test",
        claims=[
            _claim("agenda-test", "test_accuracy", "test", MIX, PLAIN, 1e-4),
            _claim("ablation-test", "test_accuracy", "test", CUT, MIX, 0.27),
        ],
    )


def _problems(text: str, ledger: Ledger) -> list[str]:
    return [p for c in check_text(text, ledger) for p in c.problems]


@pytest.mark.parametrize(
    "sentence",
    [
        "Our test rejects the null hypothesis of equal test accuracy for mixup training and the no "
        "mixing ablation.",
        "The null hypothesis that mixup training and the no mixing ablation share one mean test "
        "accuracy was rejected.",
    ],
)
def test_a_rejected_null_hypothesis_is_a_claim_of_significance(sentence: str, ledger: Ledger) -> None:
    assert any("significance" in p for p in _problems(sentence, ledger)), sentence


def test_a_null_hypothesis_not_rejected_is_a_hedge(ledger: Ledger) -> None:
    text = (
        "We cannot reject the null hypothesis of no difference between mixup training and the no "
        "mixing ablation."
    )
    assert _problems(text, ledger) == []


# The ledger: mixup training is significantly worse than plain training on test accuracy.
@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training outclasses plain training on test accuracy.",  # an out- verb
        "On test accuracy, mixup training lands above plain training.",  # a position above a group
        "Mixup training delivers the top test accuracy of the two, ahead of plain training.",
        "Mixup training matches plain training on test accuracy.",  # a verb of matching
        "We found no evidence that mixup training falls behind plain training on test accuracy.",
        "Mixup training makes fewer mistakes than plain training on the test set.",  # an error noun
        "Going from plain training to mixup training raises test accuracy.",  # the reference first
    ],
)
def test_a_false_comparison_is_read_by_its_structure(sentence: str, ledger: Ledger) -> None:
    assert any("states" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training cannot keep up with plain training on test accuracy.",
        "There is no sign that the no mixing ablation outperforms mixup training on test accuracy.",
        "It is plain training, not mixup training, that reaches the higher test accuracy.",
        "Plain training lowers the test error relative to mixup training.",
        "Going from plain training to mixup training lowers test accuracy from 0.835 to 0.781.",
        "Compared with plain training, mixup training moves test accuracy from 0.835 to 0.781.",
        "Plain training cuts the test error by a factor of 1.3 compared with mixup training.",
        "Mixup training and plain training reach 0.781 and 0.835 test accuracy, respectively.",
    ],
)
def test_an_honest_comparison_read_by_its_structure_is_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


def test_an_ambiguous_first_name_is_told_apart_by_the_second(ledger: Ledger) -> None:
    # "baseline" may denote either group; "tuned baseline" names one, so the first is the other.
    draft = GroupSummary(label="baseline (draft n0000)", name="baseline", n=4, mean=0.91, sd=0.01)
    tuned = GroupSummary(label="tuned baseline (best of hyperparameter)", n=4, mean=0.95, sd=0.01)
    two = Ledger(  # the headline's reference is the tuned baseline: "baseline" denotes both
        idea="x",
        headline_id="agenda-test",
        claims=[
            _claim("agenda-test", "test_accuracy", "test", MIX, tuned, 1e-4),
            _claim("hyperparameter-test", "test_accuracy", "test", tuned, draft, 1e-4),
        ],
    )
    assert _problems("Baseline trails tuned baseline on test accuracy.", two) == []
    assert any("states" in p for p in _problems("Baseline beats tuned baseline on test accuracy.", two))


def test_a_sentence_naming_one_group_is_read_against_the_claim_it_can_state(ledger: Ledger) -> None:
    # Mixup training is worse than plain training (significant) and level with the ablation (not):
    # "significantly worse" is true of the first claim, whichever the ledger lists first.
    text = "Mixup training is significantly worse on test accuracy."
    assert _problems(text, ledger) == []
    claims = [c.model_copy(update={"headline": False}) for c in reversed(ledger.claims)]
    flipped = Ledger(idea="m", claims=claims)
    assert _problems(text, flipped) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training reaches a balanced accuracy of 0.781.",  # a qualified metric is another metric
        "On top-3 accuracy, mixup training trails plain training.",
        "Mixup training has a specificity of 0.781.",
    ],
)
def test_a_qualified_or_unlisted_metric_the_run_lacks_is_unmeasured(sentence: str, ledger: Ledger) -> None:
    assert any("did not measure" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Dropout regularisation falls short of plain training on test accuracy.",  # the subject side
        "A gradient-boosted forest scores 0.835 on test accuracy.",  # 'boosted' in a compound: no cue
        "Unlike label smoothing, mixup training reaches 0.781.",
        "Plain training improves on cutmix by 5%.",
    ],
)
def test_a_side_of_a_comparison_that_is_no_group_is_found(sentence: str, ledger: Ledger) -> None:
    assert any("no group of the run" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Test accuracy is more favourable under mixup training than under plain training.",
        "Plain training gives a significantly poorer test accuracy than mixup training.",
        "Test accuracy deteriorates when mixup training is replaced by plain training.",
        "Mixup training betters plain training on test accuracy.",
        "On test accuracy the order is clear: mixup training first, then plain training.",
        "Swapping mixup training for plain training lowers test accuracy.",
        "Mixup training beats plain training on test accuracy, contrary to our hypothesis.",
        "The test error of plain training is higher than that of mixup training.",
    ],
)
def test_a_false_comparison_in_other_words_is_found(sentence: str, ledger: Ledger) -> None:
    assert any("states" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "We hypothesised that mixup training would beat plain training on test accuracy.",
        "Plain training lowers the error rate relative to mixup training.",  # 1 - accuracy: measured
        "The error rate of mixup training is 1.3 times that of plain training.",
        "Test accuracies are 0.784 (no mixing ablation) and 0.781 (mixup training).",
        "The error rate of plain training is lower than that of mixup training.",
    ],
)
def test_an_honest_sentence_in_other_words_is_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


@pytest.mark.parametrize(
    "text",
    [
        "Ridge regression, a strong baseline elsewhere, reaches 0.802 on test accuracy.",
        "A ridge-regression baseline reaches 0.802 on test accuracy.",
        " & mixup training & plain training & ResNet-50 \\\\ \nTest accuracy & 0.781 & 0.835 & 0.811 \\\\ \n",
        "When specificity replaces test accuracy, mixup training and plain training keep their order.",
    ],
)
def test_a_result_for_a_system_or_metric_the_run_lacks_is_found(text: str, ledger: Ledger) -> None:
    assert any("no group of the run" in p or "did not measure" in p for p in _problems(text, ledger)), text


def test_what_a_rejected_null_hypothesis_says_is_not_the_claim(ledger: Ledger) -> None:
    # The ablation and mixup training do not differ (p = 0.27): rejecting their equality is false.
    text = (
        "The null hypothesis that the no mixing ablation and mixup training reach one mean test "
        "accuracy is rejected at the 0.05 level."
    )
    assert any("significance" in p for p in _problems(text, ledger))


def test_a_figure_given_as_the_difference_must_be_the_difference(ledger: Ledger) -> None:
    # 0.005 is plain training's sd, not the difference (0.054).
    wrong = "The difference in test accuracy (plain training minus mixup training) comes to 0.005."
    assert any("as the difference" in p for p in _problems(wrong, ledger))
    right = "The difference in test accuracy (plain training minus mixup training) comes to 0.054."
    assert _problems(right, ledger) == []


def test_a_result_beside_a_group_for_a_system_the_run_lacks_is_found(ledger: Ledger) -> None:
    text = "An early-stopping regularization baseline reaches 0.702, compared with 0.781 for mixup training."
    assert any("no group of the run" in p for p in _problems(text, ledger))


@pytest.mark.parametrize(
    "sentence",
    [
        "Plain training is bested by mixup training on test accuracy.",  # the passive of 'best'
        "Moving from mixup training to plain training worsens test accuracy.",
        "The superiority of mixup training over plain training on test accuracy is clear.",
        "Plain training is the loser of its comparison with mixup training.",
    ],
)
def test_a_false_comparison_by_verb_noun_or_passive_is_found(sentence: str, ledger: Ledger) -> None:
    assert any("states" in p for p in _problems(sentence, ledger)), sentence


def test_more_shapes_of_significance_results_and_systems(ledger: Ledger) -> None:
    null = "The no mixing ablation and mixup training differ in a statistically meaningful way."
    assert any("significance" in p for p in _problems(null, ledger))
    under = "Mean test accuracy is 0.835 under plain training and 0.781 under mixup training."
    assert _problems(under, ledger) == []
    for text in (
        "Mixup training matches Co-teaching on test accuracy.",
        "Results for early stopping (0.802) lag behind mixup training.",
    ):
        assert any("no group of the run" in p for p in _problems(text, ledger)), text
    # "no" in a group's name denies nothing.
    unlisted = (
        "With specificity instead of test accuracy, the no mixing ablation and mixup training keep "
        "their order."
    )
    assert any("did not measure" in p for p in _problems(unlisted, ledger))


def test_the_held_out_choices_own_measure_of_the_selection_metric_may_be_called_held_out() -> None:
    # A run without a test metric whose held-out choice measured val_accuracy on unseen data.
    def ledger(heldout: str | None) -> Ledger:
        claim = _claim("agenda-val", "val_accuracy", "selection", MIX, PLAIN, 1e-4)
        return Ledger(idea="m", headline_id="agenda-val", claims=[claim], heldout_metric=heldout)

    own = "The held-out choice reaches a held-out validation accuracy of 0.874."
    assert _problems(own, ledger("val_accuracy")) == []
    assert any("selected on" in p for p in _problems(own, ledger(None)))
    # A group's figure is the search's, never the held-out choice's: still a finding.
    group = "Mixup training reaches a held-out validation accuracy of 0.781."
    assert any("selected on" in p for p in _problems(group, ledger("val_accuracy")))


# Each side of a comparison (its object, its subject, each member of a list with a group in it) is
# resolved against the run's names and the generic words of experimental prose; a side with a word
# outside both names a system the run does not have, whatever family of model it is.
@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training edges out label propagation on test accuracy.",
        "Plain training and the co-training scheme end up level on test accuracy.",
        "Plain training leads, ahead of mixup training and entropy minimisation.",
        "Mixup training and temperature scaling both reach 0.781 on test accuracy.",
        "The margin over confident learning is 5.4 points for plain training.",
        "We find mixup training to be on a par with the robust loss variant.",
        "The student network trained with distillation trails plain training by a wide margin.",
    ],
)
def test_a_side_that_resolves_to_nothing_of_the_run_is_no_group(sentence: str, ledger: Ledger) -> None:
    assert any("no group of the run" in p for p in _problems(sentence, ledger)), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Plain training does better than chance on test accuracy.",
        "Mixup training trails plain training, as it already did in the preliminary stage.",
        "A Welch test finds no significant difference between the no mixing ablation and mixup training.",
        "The no mixing ablation neither significantly outperforms nor significantly underperforms mixup "
        "training on test accuracy.",
        "On test accuracy the two mixing variants, mixup training and the no mixing ablation, are "
        "indistinguishable.",
        "Swapping mixup training for plain training yields a significant gain in test accuracy.",
    ],
)
def test_a_side_in_generic_words_or_the_runs_own_is_no_absent_group(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


# Ranks, under- verbs, steps and concessions are comparisons too; the ablation and mixup training
# do not differ (p = 0.27), plain training beats mixup training.
@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training comes second to the no mixing ablation on test accuracy.",
        "The no mixing ablation is a meaningful step up from mixup training in test accuracy.",
        "Mixup training underdelivers relative to the no mixing ablation on test accuracy.",
        "Plain training gives up 5.4 points of test accuracy to mixup training.",
        "Mixup training leaves plain training behind on test accuracy.",
    ],
)
def test_a_rank_an_under_verb_a_step_or_a_concession_is_a_comparison(sentence: str, ledger: Ledger) -> None:
    assert any("states" in p for p in _problems(sentence, ledger)), sentence


# Each figure belongs to the group it is said of where groups and figures alternate; a change in
# points may be hyphenated; a figure before "short" is the shortfall.
@pytest.mark.parametrize(
    "sentence",
    [
        "Compared with plain training (0.835), mixup training reaches 0.781.",
        "Test accuracy drops from 0.835 under plain training to 0.781 under mixup training.",
        "Plain training holds a 5.4-point lead over mixup training on test accuracy.",
        "Mixup training falls 0.054 short of plain training on test accuracy.",
        "Mixup training and plain training reach 0.781 and 0.835 on test accuracy.",  # in order
        "We see no benefit of mixup training over plain training on test accuracy.",  # not better
    ],
)
def test_figures_are_read_where_they_stand(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


@pytest.fixture
def searched(ledger: Ledger) -> Ledger:
    """The toy ledger with the search's own comparison: mixup training wins on validation accuracy,
    and the ablation's training time (another metric), where it is significantly faster."""
    mix = MIX.model_copy(update={"mean": 0.902, "sd": 0.006})
    plain = PLAIN.model_copy(update={"mean": 0.880, "sd": 0.007})
    fast = _claim("ablation-time", "train_time_s", "other", CUT, MIX, 1e-4).model_copy(
        update={"direction": "minimize", "verdict": "better", "diff": -0.2}
    )
    claims = [fast, *ledger.claims, _claim("agenda-val", "val_accuracy", "selection", mix, plain, 0.01)]
    return Ledger(idea="mixup", headline_id="agenda-test", claims=claims)


@pytest.mark.parametrize(
    "sentence",
    [
        "The testing accuracy of mixup training is 0.902.",
        "Measured on the hold-out data, mixup training scores 0.902 against 0.880 for plain training.",
        "In our final evaluation on the test fold, mixup training reaches 0.902.",
    ],
)
def test_the_selection_metric_as_test_data_in_any_wording_is_found(sentence: str, searched: Ledger) -> None:
    assert _problems(sentence, searched), sentence


def test_a_sentence_naming_no_metric_is_read_on_every_metric_of_its_pair(searched: Ledger) -> None:
    # The ablation's one significant win is on training time: a sentence that names no metric may
    # mean it, so it cannot be told false; on the test metric it can.
    assert _problems("The no mixing ablation beats mixup training by a significant margin.", searched) == []
    assert _problems(
        "The no mixing ablation beats mixup training on test accuracy by a significant margin.", searched
    )
    # Mixup training won the search (validation) and lost the test: either may be meant.
    assert _problems("During the search, mixup training beat plain training.", searched) == []
    assert (
        _problems("On validation accuracy, mixup training leads plain training (0.902 vs. 0.880).", searched)
        == []
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "We test the no mixing ablation against mixup training at a confidence level of 0.95.",
        "We observe the lack of any significant difference between the no mixing ablation and mixup "
        "training on test accuracy (p = 0.27).",
    ],
)
def test_a_threshold_or_a_denied_significance_is_no_claim(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


def test_a_caption_label_and_the_table_environment_are_no_side(ledger: Ledger) -> None:
    tex = (
        "\\begin{table}[h]\\centering\n\\begin{tabular}{lp{2cm}}\n\\hline\nGroup & Mean \\\\\n"
        "No mixing ablation & 0.784 \\\\\nMixup training & 0.781 \\\\\n\\hline\n\\end{tabular}\n"
        "\\caption{Test accuracy: no detectable difference ($p = 0.27$).}\n\\end{table}"
    )
    text = plain(tex, {})
    assert "tabular" not in text
    assert _problems(text, ledger) == []
    assert _problems("Run summary: no detectable difference on test accuracy ($p = 0.27$).", ledger) == []


def test_what_a_group_would_need_to_match_another_says_it_is_worse(ledger: Ledger) -> None:
    honest = "Mixup training would require a 7% relative gain to match plain training on test accuracy."
    assert _problems(honest, ledger) == []
    false = "Plain training would require a 7% relative gain to match mixup training on test accuracy."
    assert any("states" in p for p in _problems(false, ledger))


@pytest.mark.parametrize(
    "text",
    [
        "Below, NMA denotes the no mixing ablation. NMA and mixup training do not differ on test accuracy.",
        "We write NMA for no mixing ablation. NMA and mixup training do not differ on test accuracy.",
    ],
)
def test_an_abbreviation_defined_before_its_name_is_an_alias(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger) == [], text


_STAGE_TABLE = (
    "\\begin{{table}}[h]\\centering\n\\caption{{{caption}}}\n\\begin{{tabular}}{{lcc}}\\toprule\n"
    "Group & val\\_accuracy & test\\_accuracy \\\\ \\midrule\nMixup training & 0.902 & 0.781 \\\\\n"
    "Plain training & 0.880 & 0.835 \\\\\n\\bottomrule\\end{{tabular}}\n\\end{{table}}\n"
)


def test_a_paragraph_beside_a_table_is_not_its_caption(searched: Ledger) -> None:
    # The paragraph after the float speaks of the held-out test; the table's validation column is
    # the search's own figures, which its caption does not call held-out.
    after = "\n\nOn the held-out test set, plain training reaches 0.835.\n"
    before = "On the held-out test set, plain training reaches 0.835.\n\n"
    table = _STAGE_TABLE.format(caption="Per-stage results: mean over seeds.")
    assert _problems(plain(table + after, {}), searched) == []
    assert _problems(plain(before + table, {}), searched) == []
    # Within the float, a caption calling the columns held-out still speaks of the validation column.
    held_out = _STAGE_TABLE.format(caption="Held-out test results: mean over seeds.")
    assert any("selected on" in p for p in _problems(plain(held_out + after, {}), searched))


def test_a_bound_on_the_p_value_says_which_test_a_sentence_states(searched: Ledger) -> None:
    # Naming no metric: "p < 0.001" fits the ablation's training-time test (p = 1e-4), not its
    # test-accuracy one (p = 0.27), and of mixup against plain training only the test-accuracy loss.
    assert _problems("The no mixing ablation beats mixup training significantly (p < 0.001).", searched) == []
    assert any("states" in p for p in _problems("Mixup training beats plain training (p < 0.001).", searched))


def test_a_group_taken_as_the_reference_is_the_reference(ledger: Ledger) -> None:
    honest = "Taking plain training as the reference, mixup training lowers test accuracy by 0.054."
    assert _problems(honest, ledger) == []
    yardstick = "With plain training as our yardstick, mixup training trails on test accuracy."
    assert _problems(yardstick, ledger) == []
    false = "Taking plain training as the reference, mixup training improves test accuracy by 0.054."
    assert any("states" in p for p in _problems(false, ledger))


# Mixup training is significantly worse than plain training; the ablation and mixup training do
# not differ (p = 0.27).
@pytest.mark.parametrize(
    "sentence",
    [
        "Put briefly, mixup training > plain training in test accuracy.",  # an order in mathematics
        # p = 0.27 printed: without the significance asserted, only the means' order would be read.
        "The no mixing ablation beats mixup training on test accuracy with statistical significance "
        "(p = 0.27).",
        "Our Welch test confirms that the no mixing ablation beats mixup training on test accuracy "
        "(p = 0.27).",
        "Plain training and mixup training behave similarly on test accuracy.",
        "On test accuracy, mixup training does not come close to the no mixing ablation.",
    ],
)
def test_an_order_a_confirmed_test_or_a_likeness_is_a_comparison(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger), sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Put briefly, plain training > mixup training in test accuracy.",
        "The no mixing ablation and mixup training behave similarly on test accuracy.",
        "On test accuracy, mixup training does not come close to plain training.",
        "The no mixing ablation beats mixup training on test accuracy but does not reach statistical "
        "significance.",
        "The test confirms that mixup training trails plain training on test accuracy.",
    ],
)
def test_the_same_shapes_stated_truly_are_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


def test_a_system_brought_in_as_a_comparator_must_be_a_group(ledger: Ledger) -> None:
    text = "We add label smoothing as a further point of comparison; it reaches 0.790."
    assert any("no group of the run" in p for p in _problems(text, ledger))
    assert _problems("We keep plain training as the reference; it reaches 0.835.", ledger) == []


# Mixup training (0.781) is significantly worse than plain training (0.835); the ablation (0.784)
# and mixup training do not differ (p = 0.27).
@pytest.mark.parametrize(
    "text",
    [
        # a score in the groups' order, not a change from one figure to the other
        "Plain training beats mixup training, 0.835 to 0.781, on test accuracy.",
        # each end of a change is said of the group it is with
        "Test accuracy rises from 0.781 with mixup training to 0.835 with plain training.",
        "We abbreviate the no mixing ablation as NMA. NMA reaches 0.784 on test accuracy.",
        # an adverbial opening, the authors, a clause: no side of the comparison
        "Despite a nominal edge for the no mixing ablation, we cannot say that it beats mixup training on "
        "test accuracy (p = 0.27).",
        "We attribute no real difference in test accuracy to the choice between the no mixing ablation "
        "and mixup training.",
        "Contrary to what one might expect, mixup training does not beat plain training on test accuracy.",
        "Going from plain training to mixup training, test accuracy falls.",
        # "as the ..." defines no abbreviation "the"
        "We refer to plain training as the reference run. On the test set, mixup training trails the no "
        "mixing ablation slightly, and not significantly.",
    ],
)
def test_how_figures_names_and_openings_are_read_leaves_honest_text_alone(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger) == [], text


def test_a_verb_of_change_of_a_named_metric_says_the_direction(ledger: Ledger) -> None:
    false = "Going from mixup training to plain training, test accuracy falls."
    assert any("states" in p for p in _problems(false, ledger))


# The ablation (0.784) and mixup training (0.781) do not differ (p = 0.27); plain training (0.835)
# is significantly better than mixup training.
@pytest.mark.parametrize(
    "sentence",
    [
        # a judgement denied, its significance with it
        "We do not judge the no mixing ablation to be significantly better than mixup training (p = 0.27).",
        # "behind" is no participle: "by" makes no passive of it
        "On test accuracy, mixup training is the one left behind by plain training.",
    ],
)
def test_a_denied_judgement_and_left_behind_are_read(sentence: str, ledger: Ledger) -> None:
    assert _problems(sentence, ledger) == [], sentence


def test_a_rank_below_is_worse_whatever_the_metrics_direction(searched: Ledger) -> None:
    # The ablation trains significantly faster (training time, minimised) than mixup training.
    assert _problems("Mixup training ranks below no mixing ablation on train time.", searched) == []


def test_reaching_significance_asserts_it(ledger: Ledger) -> None:
    text = "The no mixing ablation edges out mixup training, and the gap reaches significance (p = 0.27)."
    assert any("significance" in p for p in _problems(text, ledger))
    inverted = "On test accuracy, plain training is the one left behind by mixup training."
    assert any("states" in p for p in _problems(inverted, ledger))


@pytest.mark.parametrize(
    "text",
    [
        "Put briefly: plain training wins, mixup training loses, on test accuracy.",  # a lead-in, no side
        # the later clause's words are said of the group that clause names
        "Plain training is our pick on test accuracy; mixup training is clearly worse.",
        "We measure 78.1% test accuracy for mixup training and 83.5% for plain training.",
        "Although the no mixing ablation scores slightly higher (0.784 vs. 0.781), the difference is not "
        "significant (p = 0.27).",
        "In contrast to mixup training, plain training achieves a significantly better test accuracy.",
    ],
)
def test_lead_ins_clauses_and_percent_figures_are_read_as_written(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger) == [], text


@pytest.mark.parametrize(
    "text",
    [
        "On AUPRC, mixup training scores 0.781.",
        "Like label smoothing, plain training improves over mixup training on test accuracy.",
        "Mixup training is roughly as good as label smoothing on test accuracy.",
        "Mixup training is our pick on test accuracy; plain training is clearly worse.",
    ],
)
def test_a_likeness_a_clause_or_an_unlisted_metric_is_found(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger), text


@pytest.mark.parametrize(
    "text",
    [
        "Of plain training and mixup training, the latter scores worse on test accuracy.",
        "Between mixup training and plain training, plain training has the better test accuracy.",
        "Is the no mixing ablation better than mixup training on test accuracy? Not detectably (p = 0.27).",
        "Mixup training (4 seeds) and plain training (4 seeds) reach 0.781 and 0.835.",
        "Plain training is easier to tune and better on test accuracy than mixup training.",
    ],
)
def test_anaphora_fronted_pairs_questions_and_seed_counts_are_read(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger) == [], text


def test_the_latter_is_the_second_group_named(ledger: Ledger) -> None:
    false = "Of mixup training and plain training, the latter scores worse on test accuracy."
    assert any("states" in p for p in _problems(false, ledger))


@pytest.mark.parametrize(
    "text",
    [
        "Mixup training reaches 0.781 on test accuracy, well below the 0.835 of plain training.",
        "Mixup training is outperformed on test accuracy, by plain training.",  # a passive, modifiers between
        "Mixup training cannot compete with plain training on test accuracy.",
    ],
)
def test_a_figure_of_a_group_a_delayed_passive_and_competing_are_read(text: str, ledger: Ledger) -> None:
    assert _problems(text, ledger) == [], text


def test_competing_and_a_level_are_read(searched: Ledger) -> None:
    false = "Plain training cannot compete with mixup training on test accuracy."
    assert any("states" in p for p in _problems(false, searched))
    # "at the 0.05 level" is the test's threshold, no figure: the sentence is read on the metric it
    # names, where the ablation does not differ from mixup training.
    level = "The no mixing ablation beats mixup training on test accuracy, significant at the 0.05 level."
    assert any("significance" in p for p in _problems(level, searched))


# Wordings of a later, independent phrase bank's tune half: each a general cause of a miss or a false
# flag (layout, symbols, the scope of a denial or an expectation, where a figure belongs).
def _tex(tex: str, ledger: Ledger) -> list[str]:
    return _problems(plain(tex, {}), ledger)


def test_a_table_written_on_one_line_is_read_row_by_row(ledger: Ledger) -> None:
    row = (
        r"\begin{tabular}{lc}\hline Method & Test accuracy \\ \hline mixup training & {} \\ "
        r"plain training & {} \\ \hline\end{tabular}"
    )
    assert _tex(row.replace("{}", "0.781", 1).replace("{}", "0.835", 1), ledger) == []
    moved = _tex(row.replace("{}", "0.835", 1).replace("{}", "0.781", 1), ledger)
    assert any("figure 0.835 of" in p for p in moved), moved


@pytest.mark.parametrize(
    ("sentence", "found"),
    [
        (r"Plain training makes 1.3$\times$ fewer errors than mixup training on test accuracy.", False),
        (r"Plain training makes 3.9$\times$ fewer errors than mixup training on test accuracy.", True),
        ("Plain training better by 5.4 pts on test accuracy than mixup training.", False),
        ("Plain training better by 9.9 pts on test accuracy than mixup training.", True),
        ("Mixup training reaches 0.781, which is 0.054 short of the 0.835 of plain training.", False),
        ("Mixup training and the no mixing ablation differ by 0.003 in mean test accuracy.", False),
    ],
)
def test_ratios_points_and_distances_in_any_notation_are_the_claims(
    sentence: str, found: bool, ledger: Ledger
) -> None:
    assert bool(_tex(sentence, ledger)) == found, _tex(sentence, ledger)


@pytest.mark.parametrize(
    "sentence",
    [
        "We do not observe the hoped-for gain: mixup training trails plain training significantly.",
        "Mixup training's gain over the no mixing ablation on test accuracy, if any, is not significant.",
        "Whereas one might expect mixup training to improve test accuracy over the no mixing ablation, we "
        "observe no significant difference.",
        "Over 4 seeds per configuration, plain training outperforms mixup training on test accuracy.",
        "Not found: a significant effect of the no mixing ablation vs mixup training on test accuracy.",
        "Mixup training falls behind plain training on test accuracy, reaching 0.781 where plain training "
        "reaches 0.835.",
        "In contrast to what the raw means (0.781 vs. 0.784) might suggest, the no mixing ablation is not "
        "significantly different from mixup training on test accuracy.",
        "Taken together, these results place plain training ahead of mixup training on test accuracy.",
        "Based on 4 seeds, mixup training averages 0.781 on test accuracy.",
        "We also evaluate the learning rate.",
        "Errors drop by a factor of 1.3 when plain training replaces mixup training.",
        "There is a significant difference in test accuracy between mixup training and plain training, "
        "favouring plain training.",
        "The p-value of 0.27 exceeds 0.05; we therefore report no difference between the no mixing "
        "ablation and mixup training.",
        "Test accuracy ranking (significant): 1. plain training, 2. mixup training.",
        "We reject the null of equal test accuracy for mixup training and plain training ($p < 0.001$).",
        "Test accuracy, which we report last, averages 0.781 for mixup training.",
        "0.781 and 0.835 are the mean test accuracy values of mixup training and plain training.",
        "Plain training is ahead on test accuracy; mixup training reaches 0.781, compared with 0.835 for "
        "plain training.",
        "To our knowledge, this is the first study to compare mixup training and plain training under a "
        "shared protocol; on test accuracy they reach 0.781 and 0.835.",
        "Our findings point to a robust advantage for plain training: its test accuracy of 0.835 exceeds the "
        "0.781 of mixup training.",
        "Plain training's test accuracy of 0.835 exceeds that of mixup training (0.781).",
        "Introducing plain training pays off: test accuracy goes from 0.781 with mixup training to 0.835.",
        "Test accuracy ranking (significant): 1. plain training, 2. mixup training.",
        "The no mixing ablation is no better and no worse than mixup training at the 0.05 level.",
        "Our approach, mixup training, offers no significant gain over the no mixing ablation on test "
        "accuracy.",
        "Plain training, or PT, is significantly ahead of mixup training on test accuracy; PT averages "
        "0.835.",
        "Let MT denote mixup training. MT reaches a mean test accuracy of 0.781 over 4 seeds.",
        "PT (plain training) averages 0.835 on test accuracy.",
    ],
)
def test_honest_sentences_of_a_fresh_writer_are_left_alone(sentence: str, ledger: Ledger) -> None:
    assert _tex(sentence, ledger) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Plain training falls significantly behind mixup training on test accuracy.",
        "Notably, even the modest gap of 0.003 in test accuracy reaches statistical significance "
        "($p = 0.27$).",
        "We therefore conclude, at the 0.05 level, that the no mixing ablation outperforms mixup training "
        "on test accuracy ($p = 0.27$).",
        "The no mixing ablation is reliably better than mixup training on test accuracy.",
        "The effect of the no mixing ablation versus mixup training on test accuracy clears the significance "
        "threshold ($p = 0.27$).",
        "The no mixing ablation and mixup training are statistically distinguishable on test accuracy.",
    ],
)
def test_a_wrong_direction_or_significance_in_a_fresh_wording_is_found(sentence: str, ledger: Ledger) -> None:
    problems = _tex(sentence, ledger)
    assert any("significance" in p or "verdict" in p for p in problems), problems


@pytest.mark.parametrize(
    "sentence",
    [
        "Even a strong baseline such as ELR+ falls short of mixup training on test accuracy.",
        "Interestingly, a LightGBM ensemble is the best-performing configuration on test accuracy, though "
        "it still trails plain training.",
        "We also evaluate forward loss correction; it obtains 0.781.",
        "We include a kernel SVM as an extra baseline; it scores 0.781.",
        "Mixup training tends to match a Gaussian-process classifier on test accuracy.",
        "A Gaussian-process classifier get 0.781 on test accuracy.",
        "Plain training also outperforms an SVM with an RBF kernel on test accuracy.",
        "A ResNet-18 and plain training perform comparably on test accuracy.",
    ],
)
def test_a_system_named_as_an_instance_or_before_a_copula_is_no_group(sentence: str, ledger: Ledger) -> None:
    assert any("no group of the run" in p for p in _tex(sentence, ledger)), _tex(sentence, ledger)


@pytest.mark.parametrize(
    "sentence",
    [
        "Mixup training also improves label-recovery rate over plain training.",
        "Notably, plain training reaches a certified robustness of 0.835, compared to 0.781 for mixup "
        "training.",
    ],
)
def test_a_measure_by_its_head_noun_is_a_metric_the_run_may_lack(sentence: str, ledger: Ledger) -> None:
    assert any("did not measure" in p for p in _tex(sentence, ledger)), _tex(sentence, ledger)


@pytest.fixture
def selection() -> Ledger:
    mix = MIX.model_copy(update={"mean": 0.848})
    base = PLAIN.model_copy(update={"mean": 0.754})
    return Ledger(
        idea="mixup",
        headline_id="agenda-val",
        claims=[_claim("agenda-val", "val_accuracy", "selection", mix, base, 1e-4)],
    )


@pytest.mark.parametrize(
    ("sentence", "found"),
    [
        ("Mixup training reaches 84.8\\% accuracy on the test set.", True),
        ("On the test set, mixup training improves on plain training by 0.094.", True),
        ("These are validation figures used for model selection, not held-out test results: mixup "
         "training reaches 0.848 and plain training 0.754.", False),
    ],
)  # fmt: skip
def test_the_selection_metric_as_a_test_result_in_percent_or_as_a_difference(
    sentence: str, found: bool, selection: Ledger
) -> None:
    problems = _tex(sentence, selection)
    assert any("selected on" in p for p in problems) == found, problems
