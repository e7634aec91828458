"""The step-time model fitted to a k x concurrency sweep: recovery, held-out rows, advice."""

from __future__ import annotations

import pytest
from engine_cases import ALPHA, DRAFT, SETUP, TARGET, TRUTH, TRUTH_HW, synthetic_sweep
from trnspec.perf.step_time import predict_grid

from trnspec_tools.tune.engine_analysis import engine_grid, engine_verdicts
from trnspec_tools.tune.engine_fit import (
    BatchAdvice,
    EngineFit,
    HeldOut,
    SweepPoint,
    ValidationRow,
    advice_of,
    conditional_tokens_per_step,
    deployment,
    fit_engine,
    held_out_summary,
    used_for_fit,
    validation_rows,
)


def test_step_time_is_recovered_from_throughput_and_acceptance():
    p = SweepPoint(concurrency=4, k=3, output_tokens_per_s=200.0, mean_accepted_length=2.5)
    assert p.step_s(max_batch=8) == pytest.approx(4 * 2.5 / 200.0)
    assert SweepPoint(2, 0, 100.0).step_s(8) == pytest.approx(0.02)


def test_concurrency_above_max_num_seqs_queues_instead_of_batching():
    p = SweepPoint(concurrency=8, k=0, output_tokens_per_s=100.0)
    assert p.batch(4) == 4 and p.step_s(4) == pytest.approx(0.04)


def test_rows_used_for_the_fit_are_baselines_and_the_fit_concurrency():
    assert used_for_fit(SweepPoint(8, 0, 1.0), 2)
    assert used_for_fit(SweepPoint(2, 4, 1.0, 2.0), 2)
    assert not used_for_fit(SweepPoint(8, 4, 1.0, 2.0), 2)


def test_a_fit_at_one_concurrency_predicts_the_others_when_the_engine_follows_the_model():
    """Noise-free data from known constants: the fit rows are reproduced exactly; the held-out
    rows within 15 % (one concurrency cannot pin every constant: several sets fit it exactly
    and extrapolate a little differently)."""
    points = synthetic_sweep()
    fit = fit_engine(points, SETUP, fit_concurrency=2)
    assert fit.rms_log_error < 0.02
    rows = validation_rows(points, SETUP, fit)
    for r in rows:
        if r.used_for_fit:
            assert r.predicted_speedup == pytest.approx(r.measured_speedup, rel=0.02)
    held = [r for r in rows if not r.used_for_fit]
    assert {r.concurrency for r in held} == {1, 4, 8} and len(held) == 12
    for r in rows:
        assert r.predicted_speedup == pytest.approx(r.measured_speedup, rel=0.15)
        assert r.error == pytest.approx(r.predicted_speedup / r.measured_speedup - 1)
        assert not r.implausible
    summary = held_out_summary(rows)
    assert summary.rows == 12 and summary.within_15pct == 12


def test_fit_refuses_a_sweep_without_speculative_runs_at_the_fit_concurrency():
    points = [p for p in synthetic_sweep() if p.k == 0 or p.concurrency != 2]
    with pytest.raises(ValueError, match="fit concurrency 2"):
        fit_engine(points, SETUP, fit_concurrency=2)


def true_advice(batches: list[int]) -> BatchAdvice:
    """The advice for the true engine over k = 0..8 (advice_of its grid)."""
    tau = conditional_tokens_per_step([], ALPHA)
    grid = predict_grid(TARGET, "draft_model", DRAFT, tau, range(9), batches,
                        deployment(SETUP, TRUTH_HW), TRUTH)  # fmt: skip
    return advice_of(grid, 8)


def test_advice_switches_speculation_off_at_large_batch_and_names_what_to_precompile():
    rec = true_advice([1, 2, 4, 8, 64, 512, 4096])
    best = {b: k for b, (k, _) in rec.best_k_per_batch.items()}
    stop = rec.disable_speculation_at_batch
    assert best[1] > 0 and stop is not None
    assert all(k == 0 for b, k in best.items() if b >= stop)
    assert best[1] in rec.precompile and all(1 <= k <= 8 for k in rec.precompile)
    # a speculative best k pays (speedup above 1); k=0 is plain itself
    assert all(s > 1 for k, s in rec.best_k_per_batch.values() if k > 0)


def test_per_position_acceptance_drives_tokens_per_step_where_measured():
    f = conditional_tokens_per_step([0.9, 0.5], 0.2)
    assert f(1) == pytest.approx(1.9)
    assert f(2) == pytest.approx(1 + 0.9 + 0.45)
    assert f(3) == pytest.approx(1 + 0.9 + 0.45 + 0.225)  # last position's rate carries on
    assert conditional_tokens_per_step([], 0.5)(2) == pytest.approx(1.75)


def test_held_out_errors_leave_out_rows_whose_baseline_ran_slow():
    def row(used: bool, error: float, implausible: bool) -> ValidationRow:
        return ValidationRow(2, 3, 2.0, 1.5, 1.5 * (1 + error), error, used, implausible)

    rows = [row(False, -0.10, False), row(False, -0.65, True), row(True, 0.01, False)]
    summary = held_out_summary(rows)
    assert summary == HeldOut(
        rows=1, max_abs_error=0.10, mean_abs_error=0.10, within_15pct=1, implausible_rows=1
    )
    assert held_out_summary(rows[1:]) == HeldOut(0, None, None, None, 1)


TRUE_FIT = EngineFit(TRUTH_HW, TRUTH, fit_concurrency=2, rms_log_error=0.0)
BATCHES = [1, 2, 4, 8, 64, 4096]


def _engine_verdicts(measured, error):
    grid = engine_grid(SETUP, TRUE_FIT, conditional_tokens_per_step([], ALPHA), BATCHES, 8)
    return {v.batch: v for v in engine_verdicts(grid, measured, error)}


def test_engine_advice_is_sure_only_inside_the_measured_concurrencies_and_its_held_out_error():
    """The true engine's best speedups: 1.49x, 1.46x, 1.38x, 1.20x at batch 1, 2, 4, 8, then
    0.85x at 64 and 0.72x at 4096. Measured from 1 to 64, a 10 % held-out error tells all but
    4096 (no band: beyond the measured concurrencies); a 20 % one no longer tells 8 or 64."""
    advice = true_advice(BATCHES)
    tight = _engine_verdicts([1, 64], 0.1)
    assert {b: v.verdict for b, v in tight.items()} == {
        1: "speculation", 2: "speculation", 4: "speculation", 8: "speculation",
        64: "plain", 4096: "undecided",
    }  # fmt: skip
    assert {b: v.k for b, v in tight.items() if b <= 8} == {
        b: k for b, (k, _) in advice.best_k_per_batch.items() if b <= 8
    }
    assert tight[4096].speedup_low is None
    loose = _engine_verdicts([1, 64], 0.2)
    assert [b for b, v in loose.items() if v.verdict == "undecided"] == [8, 64, 4096]


def test_without_held_out_rows_the_engine_advice_decides_nothing():
    assert {v.verdict for v in _engine_verdicts([2], None).values()} == {"undecided"}
    assert {v.verdict for v in _engine_verdicts([], 0.05).values()} == {"undecided"}
