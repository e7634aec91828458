"""The window model: closed forms, limits, fitting and the choice of k."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trnspec_tools.tune.window_fit import (
    KMeasurement,
    best_k,
    conditional_from_unconditional,
    expected_tokens_per_step,
    fit,
    fit_alpha,
    pool_conditional,
    precompile_set,
    speedup,
    tokens_per_step_from_conditional,
)


@pytest.mark.parametrize(
    ("alpha", "k", "expected"),
    [
        (0.0, 4, 1.0),  # nothing accepted: the bonus token only
        (0.5, 1, 1.5),
        (0.5, 2, 1.75),
        (0.8, 3, 1 + 0.8 + 0.64 + 0.512),
        (1.0, 4, 5.0),  # the a -> 1 limit is k + 1
        (0.3, 0, 1.0),  # no window, plain decoding
    ],
)
def test_expected_tokens_per_step_matches_the_geometric_sum(alpha, k, expected):
    assert expected_tokens_per_step(alpha, k) == pytest.approx(expected, rel=1e-12)


def test_expected_tokens_is_continuous_at_alpha_one():
    assert expected_tokens_per_step(1 - 1e-9, 7) == pytest.approx(8.0, rel=1e-6)


@pytest.mark.parametrize(("alpha", "k"), [(-0.1, 2), (1.1, 2), (0.5, -1)])
def test_expected_tokens_rejects_out_of_range_inputs(alpha, k):
    with pytest.raises(ValueError):
        expected_tokens_per_step(alpha, k)


@given(st.floats(0.0, 1.0), st.integers(0, 12))
def test_constant_per_position_acceptance_equals_the_closed_form(alpha, k):
    assert tokens_per_step_from_conditional([alpha], k) == pytest.approx(
        expected_tokens_per_step(alpha, k), rel=1e-9, abs=1e-12
    )


@given(st.floats(0.0, 1.0), st.integers(1, 12))
def test_tokens_per_step_lies_between_one_and_k_plus_one(alpha, k):
    assert 1.0 <= expected_tokens_per_step(alpha, k) <= k + 1 + 1e-9


def test_speedup_is_tokens_over_relative_step_cost():
    # a = 0.6, c = 0.2 by hand: k=1 1.6/1.2, k=2 1.96/1.4, k=3 2.176/1.6
    assert speedup(expected_tokens_per_step(0.6, 1), 1, 0.2) == pytest.approx(1.6 / 1.2)
    assert speedup(expected_tokens_per_step(0.6, 2), 2, 0.2) == pytest.approx(1.4)
    assert speedup(expected_tokens_per_step(0.6, 3), 3, 0.2) == pytest.approx(2.176 / 1.6)


def _synthetic(alpha: float, c: float, ks: list[int]) -> list[KMeasurement]:
    out = []
    for k in ks:
        per_pos = tuple(alpha ** (i + 1) for i in range(k))
        tps = expected_tokens_per_step(alpha, k)
        out.append(KMeasurement(k, tps, tps / (1 + k * c), per_pos, num_drafts=1000))
    return out


@pytest.mark.parametrize(("alpha", "c"), [(0.6, 0.2), (0.85, 0.05), (0.3, 0.5)])
def test_fit_recovers_alpha_and_cost_ratio_from_model_generated_runs(alpha, c):
    model = fit(_synthetic(alpha, c, [1, 2, 4, 6]))
    assert model.alpha == pytest.approx(alpha, abs=1e-6)
    assert model.cost_ratio == pytest.approx(c, abs=1e-9)
    assert all(a == pytest.approx(alpha, abs=1e-9) for a in model.conditional)
    assert len(model.conditional) == 6


def test_best_k_is_the_hand_computed_optimum():
    model = fit(_synthetic(0.6, 0.2, [1, 2, 3]))
    assert best_k(model, range(1, 11)) == 2


def test_best_k_grows_as_the_draft_gets_cheaper():
    expensive = fit(_synthetic(0.8, 0.3, [1, 2, 4]))
    cheap = fit(_synthetic(0.8, 0.02, [1, 2, 4]))
    assert best_k(cheap, range(1, 16)) > best_k(expensive, range(1, 16))


def test_best_k_prefers_the_smaller_k_on_a_tie():
    model = fit(_synthetic(1.0, 0.0, [1, 2]))  # c = 0, a = 1: speedup k+1, strictly rising
    assert best_k(model, [3, 5]) == 5
    flat = fit([KMeasurement(1, 1.0, 1.0), KMeasurement(2, 1.0, 1.0)])  # a = 0, c = 0
    assert best_k(flat, [1, 2, 3]) == 1


def test_negative_cost_from_noise_is_clamped_to_zero():
    # measured speedup above the tokens per step would need c < 0
    model = fit([KMeasurement(2, 2.0, 2.2), KMeasurement(4, 3.0, 3.3)])
    assert model.cost_ratio == 0.0


def test_pooling_adds_deeper_positions_from_deeper_runs():
    runs = [
        KMeasurement(1, 1.5, 1.2, (0.5,), num_drafts=100),
        KMeasurement(2, 1.75, 1.2, (0.5, 0.25), num_drafts=300),
    ]
    # position 1: (50 + 150) / (100 + 300) = 0.5; position 2: 75 / 150 = 0.5
    assert pool_conditional(runs) == pytest.approx((0.5, 0.5))


def test_conditional_from_unconditional_divides_by_the_previous_position():
    assert conditional_from_unconditional([0.8, 0.4, 0.0, 0.0]) == pytest.approx(
        [0.8, 0.5, 0.0, 0.0]
    )


def test_fit_alpha_is_exact_on_a_single_point():
    target = expected_tokens_per_step(0.42, 5)
    assert fit_alpha([(5, target)]) == pytest.approx(0.42, abs=1e-7)


@pytest.mark.parametrize(
    ("best", "k_max", "expected"), [(4, 10, [3, 4, 5]), (1, 10, [1, 2]), (10, 10, [9, 10])]
)
def test_precompile_set_is_the_best_and_its_neighbours(best, k_max, expected):
    assert precompile_set(best, k_max) == expected


def test_fit_rejects_no_measurements():
    with pytest.raises(ValueError):
        fit([])
    assert math.isfinite(fit([KMeasurement(1, 1.5, 1.2)]).cost_ratio)
