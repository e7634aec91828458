"""One question, one answer: the same rounds fed to every tool that asks "is the speculative arm
cheaper than plain here?" (bench --rounds, tune, tune --schedule, the calibration, the demo) give
the same verdict, because each asks the one A/B core (trnspec_tools.ab.comparison)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from made_runs import made_run
from trnspec.plan.verdict import Verdict

from trnspec_tools.bench import bench
from trnspec_tools.bench.run_result import ArmRun, RunResult
from trnspec_tools.calibration.summary import CalibrationRun, arm_level, summarize
from trnspec_tools.demo import sweep_rows
from trnspec_tools.tune.round_run import RoundPair, RoundRun
from trnspec_tools.tune.schedule_tune import comparisons_of
from trnspec_tools.tune.versus_plain import VersusPlain

C, K = 4, 3
tps = st.floats(10.0, 1000.0)
#: (plain tok/s, speculative tok/s, whether the speculative run lost a request) per round
lost = st.integers(0, 9).map(lambda x: x == 0)
rounds_st = st.lists(st.tuples(tps, tps, lost), min_size=1, max_size=9)


def _run(tokens_per_s: float, lost: bool) -> RunResult:
    run = made_run(output_tokens_per_s=tokens_per_s, concurrency=C)
    if not lost:
        return run
    req = dataclasses.replace(run.requests, completed=0, errors={"total": 1, "http 500": 1})
    return dataclasses.replace(run, requests=req)


def answers(rounds: list[tuple[float, float, bool]]) -> dict[str, Verdict | None]:
    """Each tool's verdict at the level for the same rounds (plain, speculative, lost)."""
    plain = [_run(p, False) for p, _, _ in rounds]
    spec = [_run(s, lost) for _, s, lost in rounds]
    pairs = [
        RoundPair.measured(i % 2 == 0, RoundRun.of(p), RoundRun.of(s))
        for i, (p, s) in enumerate(zip(plain, spec, strict=True))
    ]
    measured = {
        ("target", C): [ArmRun("target", "u", "m", r) for r in spec],
        ("baseline", C): [ArmRun("baseline", "u", "m", r) for r in plain],
    }
    [bench_level] = bench._comparison(measured, [C])
    calibration = summarize(
        [CalibrationRun("plain", C, i, 2 * i, r) for i, r in enumerate(plain)]
        + [CalibrationRun("speculative", C, i, 2 * i + 1, r) for i, r in enumerate(spec)],
        [C],
        {"plain": None, "speculative": None},
    )
    [demo_row] = sweep_rows({C: pairs})

    return {
        "bench": bench_level.verdict,
        "tune": VersusPlain.of_rounds({K: {C: pairs}}).verdict(K, C),
        "tune --schedule": comparisons_of({C: pairs})[C].verdict,
        "demo": demo_row.verdict,
        "calibration": calibration.verdicts[0].verdict,
    }


@settings(max_examples=60, deadline=None)
@given(rounds_st)
def test_the_same_rounds_get_the_same_verdict_from_every_tool(rounds):
    got = answers(rounds)
    assert len(set(got.values())) == 1, got


def test_the_tools_agree_where_the_old_rules_disagreed():
    """Eight rounds, one disturbed: calibration's old rule ("cheaper in every round") said
    undecided, tune's (the low end of the median's 90 % interval) said speculation."""
    rounds = [(100.0, 150.0, False)] * 7 + [(100.0, 80.0, False)]
    assert set(answers(rounds).values()) == {Verdict.SPECULATION}


def test_a_round_with_a_lost_request_leaves_every_tool_without_a_verdict():
    rounds = [(100.0, 150.0, False), (100.0, 150.0, True), (100.0, 150.0, False)]
    assert set(answers(rounds).values()) == {None}


def test_one_round_is_undecided_everywhere():
    assert set(answers([(100.0, 300.0, False)]).values()) == {Verdict.UNDECIDED}


#: runs the A/B core does not count (ArmRound.problem), as changes to a clean run's figures
NOT_COUNTED = {
    "an error": {"errors": {"total": 1, "timeout": 1}},
    "a lost request without an error": {"completed": 0},
    "no throughput": {"output_tokens_per_s": 0.0},
    "a throughput that is not a number": {"output_tokens_per_s": float("nan")},
    "no output tokens": {"output_tokens": 0},
}


@pytest.mark.parametrize("change", NOT_COUNTED.values(), ids=list(NOT_COUNTED))
def test_a_run_the_core_does_not_count_counts_in_no_tool(change):
    """tune's round has no ratio with it on either side, and calibration fails the arm in the
    core's words (bench reads a run through the same ArmRound)."""
    good = made_run(output_tokens_per_s=100.0, concurrency=C)
    bad = dataclasses.replace(good, requests=dataclasses.replace(good.requests, **change))
    why = bad.as_round(0).problem()
    assert why is not None and good.as_round(0).problem() is None
    assert RoundPair.measured(True, RoundRun.of(good), RoundRun.of(good)).ratio == 1.0
    assert RoundPair.measured(True, RoundRun.of(good), RoundRun.of(bad)).ratio is None
    assert RoundPair.measured(False, RoundRun.of(bad), RoundRun.of(good)).ratio is None
    level = arm_level("speculative", C, [CalibrationRun("speculative", C, 0, 0, bad)], None)
    assert level.status == "failed" and level.reason is not None
    assert level.reason.startswith(f"round 1: {why}")
