"""bench --rounds: a level's speedup and verdict are the A/B core's over its rounds (the median
of the paired ratios, with their interval); a figure one round could not give is not given for
the level; one round is the pair."""

from __future__ import annotations

import dataclasses
from statistics import median

import pytest
from hypothesis import given
from hypothesis import strategies as st
from made_runs import made_run
from trnspec.plan.verdict import Verdict

from trnspec_tools.ab import comparison as ab
from trnspec_tools.bench.rounds import PAIRED_FIGURES, LevelComparison, combined, median_runs
from trnspec_tools.bench.run_result import AcceptanceFigures, ArmRun, RunResult
from trnspec_tools.bench.stats import compare
from trnspec_tools.bench.versus_predicted import LABEL, SpeedupPrediction

Pair = tuple[RunResult, RunResult]


def _pair(target_tps: float, baseline_tps: float, **latency: float) -> Pair:
    return (
        made_run(output_tokens_per_s=target_tps, **latency),
        made_run(output_tokens_per_s=baseline_tps, **latency),
    )


def level_of(pairs: list[Pair], concurrency: int = 1) -> LevelComparison:
    """What bench finds for a level measured in these rounds (target, baseline)."""
    return combined(
        concurrency,
        [compare(t, b) for t, b in pairs],
        ab.compare(
            [b.as_round(i) for i, (_, b) in enumerate(pairs)],
            [t.as_round(i) for i, (t, _) in enumerate(pairs)],
        ),
    )


def test_one_round_is_the_pairs_own_comparison():
    pair = _pair(150.0, 100.0, itl_p50=10.0)
    level = level_of([pair], concurrency=4)
    own = compare(*pair)
    assert (level.concurrency, level.rounds, level.verdict) == (4, 1, Verdict.UNDECIDED)
    assert level.speedup_output_tokens_per_s == own.speedup_output_tokens_per_s == 1.5
    assert level.speedup_rounds == (1.5,) and level.speedup_low is None
    # bench's JSON writes it as the pair's own comparison, with the level and the verdict
    assert level.to_json() == {"concurrency": 4, **own.to_json(), "verdict": "undecided"}
    bursty = _pair(300, 400, itl_p50=0.01, tpot_p50=0.1)
    assert level_of([bursty]).note == compare(*bursty).note
    assert "streamed in bursts" in str(level_of([bursty]).note)


def test_each_latency_change_of_a_level_is_the_median_of_its_rounds_own():
    """Target and baseline latencies differ per figure and per round, so each change is told
    apart from the others (a median taken of another figure fails)."""
    rounds = [
        (
            made_run(output_tokens_per_s=150, itl_p50=i + 1, tpot_p50=2 * i + 1, ttft_p50=40 + i,
                     e2e_p50=900 - 50 * i),
            made_run(output_tokens_per_s=100, itl_p50=2.0, tpot_p50=5.0, ttft_p50=50.0,
                     e2e_p50=1000.0),
        )
        for i in range(3)
    ]  # fmt: skip
    level = level_of(rounds)
    changes = ("itl_p50_change", "tpot_p50_change", "ttft_p50_change", "e2e_p50_change")
    expected = [median(getattr(compare(t, b), name) for t, b in rounds) for name in changes]
    assert [getattr(level, name) for name in changes] == pytest.approx(expected)
    assert len(set(expected)) == len(expected)


def test_the_speedup_is_the_median_of_the_paired_ratios_not_the_ratio_of_medians():
    # target 300, 100, 200 against baseline 100, 100, 400: paired ratios 3.0, 1.0, 0.5;
    # the ratio of the arms' medians would be 200 / 100 = 2.0
    rounds = [_pair(300, 100), _pair(100, 100), _pair(200, 400)]
    level = level_of(rounds)
    assert level.speedup_output_tokens_per_s == pytest.approx(1.0)
    assert level.speedup_rounds == pytest.approx((3.0, 1.0, 0.5))
    assert (level.speedup_low, level.speedup_high) == pytest.approx((0.5, 3.0))
    assert level.speedup_interval == "min-max of the rounds"


def test_a_range_that_holds_one_says_the_arms_are_not_told_apart():
    level = level_of([_pair(110, 100), _pair(95, 100)])
    assert level.note == (
        "the speedup's min-max of the rounds (0.95-1.10) holds 1.0: at this level the target is"
        " not told apart from the baseline; measure more rounds"
    )
    assert level_of([_pair(110, 100), _pair(120, 100)]).note is None
    # a round at exactly 1.0 is a round without a speedup: the range holds 1.0 at either end
    assert "not told apart" in str(level_of([_pair(100, 100), _pair(120, 100)]).note)
    assert "not told apart" in str(level_of([_pair(80, 100), _pair(100, 100)]).note)


def test_five_rounds_give_the_interval_of_the_median():
    level = level_of([_pair(100 + i, 100) for i in range(1, 6)])
    assert level.speedup_interval == "90% CI of the median"


def test_a_speedup_one_round_lacks_is_not_given_for_the_level():
    """A round whose baseline produced nothing has no ratio: the level's median over the other
    rounds would hide it, so the level gives none, and every round's value is shown."""
    level = level_of([_pair(150, 100), _pair(150, 0)])
    assert level.speedup_output_tokens_per_s is None
    assert level.speedup_rounds == (1.5, None)
    assert (level.speedup_low, level.speedup_high, level.speedup_interval) == (None, None, None)
    assert "speedup_low" not in level.to_json()


def test_a_round_whose_speedup_the_acceptance_cannot_explain_leaves_the_level_without_one():
    """stats.compare refuses a speedup above the target's tokens per step (a stalled baseline):
    the level says which round it was, with the refused values, and gives no speedup."""
    stalled = (
        made_run(output_tokens_per_s=1034.0, acceptance=AcceptanceFigures(mean_accepted_length=2)),
        made_run(output_tokens_per_s=262.7),
    )
    level = level_of([_pair(150, 100), stalled])
    assert level.speedup_output_tokens_per_s is None
    assert level.implausible_speedup == (None, pytest.approx(1034.0 / 262.7))
    assert str(level.note).startswith("round 2: measured speedup 3.94x exceeds the 2.00")
    assert "implausible_speedup" not in level_of([_pair(150, 100), _pair(140, 100)]).to_json()


def test_no_rounds_is_an_error_not_a_figure():
    with pytest.raises(ValueError, match=r"^no rounds measured$"):
        level_of([])


def test_a_rounds_note_is_kept_with_its_round_number():
    bursty = _pair(300, 400, itl_p50=0.01, tpot_p50=0.1)
    level = level_of([_pair(300, 200, itl_p50=6.0, tpot_p50=4.0), bursty])
    assert level.itl_p50_change is None
    assert "round 2: " in str(level.note) and "round 1: " not in str(level.note)
    both = level_of([bursty, _pair(110, 100), bursty])
    notes = str(both.note).split("; ")
    assert [n[:9] for n in notes if n.startswith("round")] == ["round 1: ", "round 3: "]
    assert notes[0].startswith("the speedup's min-max")


@given(st.lists(st.tuples(st.floats(1, 1e4), st.floats(1, 1e4)), min_size=2, max_size=9))
def test_every_paired_figure_lies_within_its_rounds(pairs):
    rounds = [_pair(t, b, ttft_p50=t, e2e_p50=b) for t, b in pairs]
    level = level_of(rounds)
    for key in PAIRED_FIGURES:
        values = [compare(*r).figure(key) for r in rounds]
        if all(isinstance(v, float) for v in values):
            assert min(values) <= getattr(level, key) <= max(values)


def _arm_run(tps: float) -> ArmRun:
    return ArmRun("target", "http://x", "m", made_run(output_tokens_per_s=tps))


def test_each_arm_is_listed_by_its_median_round_level_by_level_whatever_order_the_rounds_ran():
    """Neither the first nor the last round: the median, for every arm at every level."""
    rounds = {
        ("target", 1): [_arm_run(v) for v in (300, 100, 200)],
        ("baseline", 1): [_arm_run(v) for v in (10, 30, 20)],
        ("target", 8): [_arm_run(v) for v in (900, 700, 800)],
        ("baseline", 8): [_arm_run(v) for v in (50, 70, 60)],
    }
    listed = median_runs(rounds, [1, 8], ["target", "baseline"])
    assert [r.result.output_tokens_per_s for r in listed] == [200, 20, 800, 60]


def test_the_level_carries_the_ab_verdict_of_its_rounds():
    assert level_of([_pair(150, 100), _pair(160, 100)]).verdict is Verdict.SPECULATION
    assert level_of([_pair(50, 100), _pair(60, 100)]).verdict is Verdict.PLAIN
    assert level_of([_pair(150, 100), _pair(90, 100)]).verdict is Verdict.UNDECIDED
    assert level_of([_pair(150, 100), _pair(150, 0)]).verdict is None


def test_a_round_with_failed_requests_gives_no_speedup_for_the_level():
    """A round whose target lost a request is not a measurement of the target's speed."""
    lost = made_run(output_tokens_per_s=300.0)
    lost = RunResult(
        dataclasses.replace(lost.requests, completed=0, errors={"total": 1, "http 500": 1}),
        lost.acceptance,
        None,
        None,
        None,
        1,
        None,
    )
    level = level_of([_pair(150, 100), (lost, made_run(output_tokens_per_s=100.0))])
    assert level.speedup_output_tokens_per_s is None and level.verdict is None
    assert "round 2: the candidate run does not count" in str(level.note)


#: a level of several rounds with a distinct value in every field, to see each written under
#: its own name
EVERY_FIELD = LevelComparison(
    concurrency=8,
    speedup_output_tokens_per_s=1.5,
    itl_p50_change=-0.1,
    tpot_p50_change=-0.2,
    ttft_p50_change=0.3,
    e2e_p50_change=-0.4,
    verdict=Verdict.SPECULATION,
    speedup_rounds=(1.4, 1.5, 1.6),
    speedup_low=1.4,
    speedup_high=1.6,
    speedup_interval="min-max of the rounds",
    implausible_speedup=(None, None, 9.5),
    note="round 3: a note",
    prediction=SpeedupPrediction(1.25, 1.5, 1.2, None),
)


def test_a_level_of_several_rounds_is_written_with_every_field_under_its_own_name():
    assert EVERY_FIELD.to_json() == {
        "concurrency": 8,
        "itl_p50_change": -0.1,
        "tpot_p50_change": -0.2,
        "ttft_p50_change": 0.3,
        "e2e_p50_change": -0.4,
        "speedup_output_tokens_per_s": 1.5,
        "speedup_rounds": [1.4, 1.5, 1.6],
        "speedup_low": 1.4,
        "speedup_high": 1.6,
        "speedup_interval": "min-max of the rounds",
        "verdict": "speculation",
        "implausible_speedup": [None, None, 9.5],
        "note": "round 3: a note",
        "prediction": {
            "label": LABEL,
            "predicted_speedup": 1.25,
            "measured_speedup": 1.5,
            "measured_over_predicted": 1.2,
            "reason": None,
        },
    }
    # the order bench's JSON has always had
    assert list(EVERY_FIELD.to_json())[5:8] == [
        "speedup_output_tokens_per_s",
        "speedup_rounds",
        "speedup_low",
    ]


def test_a_level_of_one_round_is_written_as_the_pair_with_every_field_under_its_own_name():
    one = dataclasses.replace(
        EVERY_FIELD,
        speedup_rounds=(1.5,),
        speedup_low=None,
        speedup_high=None,
        speedup_interval=None,
        implausible_speedup=(9.5,),
        prediction=SpeedupPrediction(None, 1.5, None, "no counters"),
    )
    assert list(one.to_json().items()) == [
        ("concurrency", 8),
        ("speedup_output_tokens_per_s", 1.5),
        ("itl_p50_change", -0.1),
        ("tpot_p50_change", -0.2),
        ("ttft_p50_change", 0.3),
        ("e2e_p50_change", -0.4),
        ("implausible_speedup", 9.5),
        ("note", "round 3: a note"),
        ("verdict", "speculation"),
        ("prediction", SpeedupPrediction(None, 1.5, None, "no counters").to_json()),
    ]
    bare = dataclasses.replace(one, implausible_speedup=(None,), note=None, prediction=None)
    assert list(bare.to_json())[-2:] == ["e2e_p50_change", "verdict"]
