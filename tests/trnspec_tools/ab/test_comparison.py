"""The one A/B rule: rounds paired by their round number, each arm at its own price, the verdict
read from the cost ratio's interval; no verdict when a round could not be paired."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from trnspec.plan.verdict import Verdict

from trnspec_tools.ab.comparison import (
    ArmRound,
    Prices,
    Unpaired,
    compare,
    decide,
    exceeds_tokens_per_step,
    pair_rounds,
)
from trnspec_tools.ab.spread import spread

tps = st.floats(1.0, 1e4)


def rounds(values: list[float], tokens: int = 1000) -> list[ArmRound]:
    return [ArmRound(i, v, tokens) for i, v in enumerate(values)]


def test_a_candidate_faster_in_every_round_is_cheaper_on_the_same_hardware():
    cmp = compare(rounds([100, 100, 100, 100]), rounds([150, 140, 160, 155]))
    assert cmp.verdict is Verdict.SPECULATION
    assert cmp.speedup is not None and cmp.speedup.low == pytest.approx(1.4)
    assert cmp.cost_ratio is not None and cmp.cost_ratio.high == pytest.approx(1 / 1.4)


def test_rounds_that_disagree_decide_nothing():
    cmp = compare(rounds([100, 100]), rounds([120, 90]))
    assert cmp.verdict is Verdict.UNDECIDED


def test_a_round_at_exactly_one_is_a_round_without_a_verdict():
    assert compare(rounds([100, 100]), rounds([100, 150])).verdict is Verdict.UNDECIDED
    assert compare(rounds([100, 100]), rounds([100, 50])).verdict is Verdict.UNDECIDED


def test_one_round_bounds_nothing():
    cmp = compare(rounds([100]), rounds([300]))
    assert cmp.verdict is Verdict.UNDECIDED
    assert cmp.speedup is not None and cmp.speedup.median == pytest.approx(3.0)


def test_rounds_are_paired_by_their_number_not_by_their_place_in_the_list():
    """Plain's rounds 0-3 were 100, 200, 100, 200 (a host that halves every other round); the
    candidate ran 1.5x plain in each. Paired by position after a shuffle, the ratios would
    spread over 0.75-3.0 and decide nothing."""
    plain = rounds([100, 200, 100, 200])
    spec = rounds([150, 300, 150, 300])
    shuffled = random.Random(3).sample(spec, len(spec))
    assert [r.round for r in shuffled] != [0, 1, 2, 3]
    cmp = compare(plain, shuffled)
    assert [p.round for p in cmp.pairs] == [0, 1, 2, 3]
    assert all(p.speedup == pytest.approx(1.5) for p in cmp.pairs)
    assert cmp.verdict is Verdict.SPECULATION


def test_the_price_ratio_is_the_candidates_price_over_the_references():
    """1.5x faster on hardware that costs twice as much: 2 / 1.5 = 1.33x the cost per token."""
    plain, spec = rounds([100, 100, 100]), rounds([150, 150, 150])
    dear = compare(plain, spec, Prices(reference=10.0, candidate=20.0))
    assert dear.price_ratio == pytest.approx(2.0)
    assert dear.cost_ratio is not None and dear.cost_ratio.median == pytest.approx(2 / 1.5)
    assert dear.verdict is Verdict.PLAIN
    cheap = compare(plain, spec, Prices(reference=20.0, candidate=10.0))
    assert cheap.cost_ratio is not None and cheap.cost_ratio.median == pytest.approx(0.5 / 1.5)
    assert cheap.verdict is Verdict.SPECULATION


def test_without_both_prices_the_arms_share_hardware():
    assert Prices(reference=10.0).ratio == 1.0 and Prices(candidate=3.0).ratio == 1.0
    assert Prices(2.0, 3.0).ratio == pytest.approx(1.5)


@pytest.mark.parametrize("price", [0.0, -1.0, float("nan"), float("inf")])
def test_a_price_that_is_not_a_positive_finite_number_is_refused(price):
    with pytest.raises(ValueError, match="price"):
        Prices(reference=price)


def test_a_failed_round_leaves_the_level_without_a_verdict():
    plain = [*rounds([100, 100, 100]), ArmRound(3, None, failure="ConnectError: refused")]
    cmp = compare(plain, rounds([150, 150, 150, 150]))
    assert cmp.verdict is None and cmp.speedup is None and cmp.cost_ratio is None
    assert [(x.round, x.why) for x in cmp.left_out] == [(3, Unpaired.FAILED)]
    assert "round 4" in cmp.reason and "ConnectError" in cmp.reason


def test_a_missing_round_leaves_the_level_without_a_verdict():
    cmp = compare(rounds([100, 100, 100]), rounds([150, 150]))
    assert cmp.verdict is None
    assert [(x.round, x.why) for x in cmp.left_out] == [(2, Unpaired.MISSING)]


def test_an_arm_that_stopped_early_did_not_do_the_same_work():
    """The speculative arm produced 2 of 8 tokens per request: its throughput measures less
    work, not a faster server."""
    plain = rounds([100, 100], tokens=800)
    spec = [ArmRound(0, 150, 800), ArmRound(1, 150, 200)]
    cmp = compare(plain, spec)
    assert cmp.verdict is None
    assert [x.why for x in cmp.left_out] == [Unpaired.DIFFERENT_WORK]


def test_output_totals_within_the_same_work_tolerance_pair():
    assert compare(rounds([100, 100], 1000), rounds([150, 150], 980)).verdict is (
        Verdict.SPECULATION
    )


def test_a_speedup_above_the_tokens_per_step_is_left_out_as_implausible():
    plain = rounds([100, 100])
    spec = [
        ArmRound(0, 150, 1000, tokens_per_step=2.0),
        ArmRound(1, 394, 1000, tokens_per_step=2.0),
    ]
    cmp = compare(plain, spec)
    assert cmp.verdict is None
    assert [(x.round, x.why) for x in cmp.left_out] == [(1, Unpaired.IMPLAUSIBLE)]


def test_a_speedup_above_the_tokens_per_step_is_impossible():
    assert not exceeds_tokens_per_step(1.9, 4.7)
    assert not exceeds_tokens_per_step(4.9, 4.7)  # within the 10 % slack for noise
    assert exceeds_tokens_per_step(3.94, 1.99)
    assert not exceeds_tokens_per_step(None, 2.0) and not exceeds_tokens_per_step(3.0, None)
    assert not exceeds_tokens_per_step(2.2, 2.0)  # exactly at the bound with its slack


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (ArmRound(0, None), "did not complete"),
        (ArmRound(0, 0.0, 10), "no output throughput"),
        (ArmRound(0, float("nan"), 10), "no output throughput"),
        (ArmRound(0, 10.0, 0), "no output tokens"),
        (ArmRound.of_run(0, 100.0, 10, 3, 4, 0), "1 of 4 requests failed"),
        (ArmRound.of_run(0, 100.0, 10, 4, 4, 2), "0 of 4 requests failed"),
    ],
)
def test_a_run_that_did_not_measure_does_not_count(run, why):
    assert why in (run.problem() or "")


def test_a_round_given_twice_is_a_programming_error():
    with pytest.raises(ValueError, match="given twice"):
        pair_rounds([ArmRound(0, 1.0), ArmRound(0, 2.0)], rounds([1.0]))


def test_from_eight_rounds_one_disturbed_round_no_longer_vetoes_the_verdict():
    """A neighbour's burst slows the candidate in one of eight rounds: the median's 90 %
    interval leaves the outermost rounds out, so the verdict stands; at four rounds it is every
    round, and the same burst leaves it undecided."""
    eight = compare(rounds([100] * 8), rounds([150, 150, 150, 80, 150, 150, 150, 150]))
    assert eight.verdict is Verdict.SPECULATION
    four = compare(rounds([100] * 4), rounds([150, 80, 150, 150]))
    assert four.verdict is Verdict.UNDECIDED


@given(st.lists(st.tuples(tps, tps), min_size=2, max_size=12), st.floats(1.01, 3.0))
def test_a_faster_candidate_is_never_a_worse_verdict(pairs, factor):
    order = {Verdict.PLAIN: 0, Verdict.UNDECIDED: 1, Verdict.SPECULATION: 2}
    plain = rounds([p for p, _ in pairs])
    slow = compare(plain, rounds([s for _, s in pairs]))
    fast = compare(plain, rounds([s * factor for _, s in pairs]))
    assert slow.verdict is not None and fast.verdict is not None
    assert order[fast.verdict] >= order[slow.verdict]


@given(st.lists(st.tuples(tps, tps), min_size=2, max_size=12), st.floats(0.2, 5.0))
def test_the_verdict_agrees_with_every_paired_round_when_they_all_agree(pairs, price_ratio):
    plain, spec = rounds([p for p, _ in pairs]), rounds([s for _, s in pairs])
    cmp = compare(plain, spec, Prices(1.0, price_ratio))
    costs = [price_ratio * p / s for p, s in pairs]
    if len(pairs) < 8 and all(c < 1 for c in costs):
        assert cmp.verdict is Verdict.SPECULATION
    if len(pairs) < 8 and all(c > 1 for c in costs):
        assert cmp.verdict is Verdict.PLAIN
    if cmp.verdict is Verdict.SPECULATION:
        assert cmp.cost_ratio is not None and cmp.cost_ratio.median < 1
    if cmp.verdict is Verdict.PLAIN:
        assert cmp.cost_ratio is not None and cmp.cost_ratio.median > 1


@given(st.lists(st.tuples(tps, tps), min_size=2, max_size=12))
def test_swapping_the_arms_swaps_the_verdict(pairs):
    a, b = rounds([p for p, _ in pairs]), rounds([s for _, s in pairs])
    swap = {Verdict.PLAIN: Verdict.SPECULATION, Verdict.SPECULATION: Verdict.PLAIN}
    there, back = compare(a, b).verdict, compare(b, a).verdict
    assert back is swap.get(there, there)  # type: ignore[arg-type]


def test_decide_reads_the_interval_not_the_median():
    assert decide(spread([0.5, 0.9, 1.1])) is Verdict.UNDECIDED
    assert decide(spread([0.5, 0.9, 0.95])) is Verdict.SPECULATION
    assert decide(spread([1.05, 1.1, 2.0])) is Verdict.PLAIN


def test_a_finished_run_counts_only_without_errors_and_lost_requests():
    assert ArmRound.of_run(0, 100.0, 10, 4, 4, 0, 2.5) == ArmRound(0, 100.0, 10, None, 2.5)
    assert ArmRound.of_run(0, 100.0, 10, 4, 4, 1).failure == "0 of 4 requests failed"
    assert ArmRound.of_run(0, 100.0, 10, 3, 4, 0).failure == "1 of 4 requests failed"


def test_what_a_run_that_does_not_count_says():
    assert ArmRound(0, None).problem() == "the run did not complete"
    assert ArmRound(0, 10.0, 0).problem() == "no output tokens were produced"
    assert ArmRound(0, 10.0, 1).problem() is None
    assert ArmRound(0, 10.0, None).problem() is None


def test_what_each_left_out_round_says():
    plain = [ArmRound(0, None, failure="timeout"), ArmRound(1, 100.0, 1000)]
    spec = [ArmRound(1, 150.0, 1000, tokens_per_step=1.0), ArmRound(2, 150.0, 1000)]
    _, left_out = pair_rounds(plain, spec)
    assert [x.line() for x in left_out] == [
        "round 1: no candidate run",
        "round 2: measured speedup 1.50x exceeds the 1.00 tokens per step the candidate's"
        " counters show (a speculative step is never cheaper than a plain one): the reference"
        " ran slow; re-measure",
        "round 3: no reference run",
    ]
    _, failed = pair_rounds([ArmRound(0, None, failure="timeout")], [ArmRound(0, 150.0, 1000)])
    assert failed[0].text == "the reference run does not count (timeout)"
    _, short = pair_rounds([ArmRound(0, 100.0, 1000)], [ArmRound(0, 150.0, 250)])
    assert short[0].text == (
        "the arms did not do the same work (reference 1000, candidate 250 output tokens):"
        " an arm stopped early"
    )


def test_a_left_out_round_does_not_stop_the_pairing_of_later_ones():
    plain = [ArmRound(0, None, failure="timeout"), *rounds([100, 100, 100])[1:]]
    pairs, left_out = pair_rounds(plain, rounds([150, 150, 150]))
    assert [p.round for p in pairs] == [1, 2] and [x.round for x in left_out] == [0]
    spec = [ArmRound(0, 400.0, 1000, tokens_per_step=2.0), *rounds([150, 150, 150])[1:]]
    pairs, _ = pair_rounds(rounds([100, 100, 100]), spec)
    assert [p.round for p in pairs] == [1, 2]


def test_without_a_price_ratio_the_cost_ratio_is_the_inverse_speedup():
    [pair] = pair_rounds(rounds([100]), rounds([150]))[0]
    assert pair.cost_ratio == pytest.approx(1 / 1.5)


def test_output_totals_exactly_the_same_work_tolerance_apart_pair():
    assert pair_rounds(rounds([100], 1000), rounds([150], 950))[1] == []


def test_prices_below_one_dollar_are_prices_and_errors_name_the_arm():
    assert Prices(reference=0.5, candidate=0.25).ratio == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"^reference price"):
        Prices(reference=0.0)
    with pytest.raises(ValueError, match=r"^candidate price"):
        Prices(candidate=-1.0)
    with pytest.raises(ValueError, match=r"^reference arm: round 0"):
        pair_rounds([ArmRound(0, 1.0), ArmRound(0, 2.0)], rounds([1.0]))
    with pytest.raises(ValueError, match=r"^candidate arm: round 0"):
        pair_rounds(rounds([1.0]), [ArmRound(0, 1.0), ArmRound(0, 2.0)])


def test_one_token_per_step_bounds_the_speedup_at_one_with_its_slack():
    assert exceeds_tokens_per_step(1.2, 1.0) and not exceeds_tokens_per_step(1.05, 1.0)
    assert not exceeds_tokens_per_step(5.0, 0.99)  # below one token per step: not judged


def test_a_failed_run_names_its_error_kinds_and_a_lost_request_without_one_says_so():
    """The kinds are named in order with their counts ("total" is the sum, not a kind); a
    request lost without any error kind had no answer."""
    kinds = {"total": 3, "timeout": 1, "http 500": 2}
    assert ArmRound.of_run(0, 100.0, 10, 2, 4, 3, error_kinds=kinds).failure == (
        "2 of 4 requests failed (http 500 2, timeout 1)"
    )
    for none in ({"total": 0}, {}):
        assert ArmRound.of_run(0, 100.0, 10, 3, 4, 0, error_kinds=none).failure == (
            "1 of 4 requests failed (no answer)"
        )


@pytest.mark.parametrize("arm", ["reference", "candidate"])
def test_a_round_left_out_for_a_run_that_does_not_count_names_that_arm(arm):
    bad, good = ArmRound(0, None, failure="timeout"), ArmRound(0, 150.0, 1000)
    ref, cand = (bad, good) if arm == "reference" else (good, bad)
    [left] = pair_rounds([ref], [cand])[1]
    assert left.why is Unpaired.FAILED
    assert left.text == f"the {arm} run does not count (timeout)"


def test_a_level_without_a_verdict_gives_every_left_out_round_as_its_reason():
    plain = [ArmRound(0, None, failure="timeout"), *rounds([100, 100, 100])[1:]]
    cmp = compare(plain, rounds([150, 150]), Prices(reference=10.0, candidate=20.0))
    assert cmp.verdict is None and [x.round for x in cmp.left_out] == [0, 2]
    assert cmp.reason.split("; ") == [x.line() for x in cmp.left_out]
    assert cmp.price_ratio == pytest.approx(2.0)  # the prices hold without a verdict too


def test_a_level_where_no_round_ran_has_no_verdict_and_says_so():
    cmp = compare([], [])
    assert (cmp.verdict, cmp.pairs, cmp.left_out) == (None, (), ())
    assert cmp.reason == "no round was measured"


#: how the reason of each verdict begins (from two rounds on)
HEADS = {
    Verdict.SPECULATION: "the candidate is cheaper: ",
    Verdict.PLAIN: "the reference is cheaper: ",
    Verdict.UNDECIDED: "undecided: ",
}


@given(st.lists(st.tuples(tps, tps), min_size=1, max_size=12), st.floats(0.2, 5.0))
@example([(100.0, 150.0)] * 2, 1.0)
@example([(150.0, 100.0)] * 2, 1.0)
@example([(100.0, 150.0), (100.0, 90.0)], 1.0)
@example([(100.0, 300.0)], 1.0)
def test_the_reason_says_the_verdict_and_the_interval_it_was_read_from(pairs, price_ratio):
    plain, spec = rounds([p for p, _ in pairs]), rounds([s for _, s in pairs])
    cmp = compare(plain, spec, Prices(1.0, price_ratio))
    assert cmp.verdict is not None and cmp.cost_ratio is not None
    assert cmp.price_ratio == pytest.approx(price_ratio)
    cost = cmp.cost_ratio
    for figure in (f"{cost.median:.2f}", f"{cost.low:.2f}", f"{cost.high:.2f}", cost.method):
        assert figure in cmp.reason
    if len(pairs) == 1:
        assert cmp.reason.startswith("one round bounds nothing (")
        assert cmp.reason.endswith(": measure 2 or more")
    else:
        assert cmp.reason.startswith(HEADS[cmp.verdict])
