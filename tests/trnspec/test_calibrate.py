"""The published Trn2 data, the fit of the model's constants, and the held-out check."""

from __future__ import annotations

import math
from importlib import resources

import pytest
from trnspec.calibrate import (
    DATA_FILE,
    FIT_FILE,
    Measurement,
    _stored_fit,
    data_digest,
    fit_efficiency,
    held_out,
    load_published,
    predicted_step_ms,
    report_markdown,
    trn2_calibration,
)
from trnspec.perf_model import Efficiency

MEASUREMENTS, SHAPES = load_published()


@pytest.mark.parametrize("m", MEASUREMENTS, ids=lambda m: m.id)
def test_every_published_figure_names_its_source_date_and_conditions(m: Measurement):
    assert m.source.startswith("https://") and m.date and m.stack
    assert m.tp >= 1 and m.batch >= 1 and m.input_len > 0 and m.output_len > 0
    assert m.tpot_ms or m.step_ms or m.output_tokens_per_s
    if m.role == "speculative":
        assert m.method != "none" and m.k >= 1
        assert m.baseline in {b.id for b in MEASUREMENTS if b.role == "baseline"}


def test_the_stored_fit_belongs_to_the_shipped_data():
    text = resources.files("trnspec").joinpath(DATA_FILE).read_text(encoding="utf-8")
    assert _stored_fit(data_digest(text)) is not None, (
        f"trnspec/{FIT_FILE} is stale: run python -m trnspec.calibrate --write"
    )
    assert _stored_fit("0" * 64) is None


def test_a_fresh_fit_reproduces_the_stored_constants():
    text = resources.files("trnspec").joinpath(DATA_FILE).read_text(encoding="utf-8")
    stored = _stored_fit(data_digest(text))
    fresh = fit_efficiency([m for m in MEASUREMENTS if m.role == "baseline"], SHAPES)
    assert stored is not None and set(fresh.efficiency) == set(stored.efficiency)
    for group, eff in fresh.efficiency.items():
        for name, value in eff.__dict__.items():
            assert value == pytest.approx(getattr(stored.efficiency[group], name), rel=1e-6)


def test_the_fit_recovers_constants_that_generated_the_data():
    truth = Efficiency(0.4, 0.05, 0.012, 3e-6, token_overhead_s=2e-4)
    synthetic = [
        Measurement(
            **{
                **m.__dict__,
                "tpot_ms": None,
                "output_tokens_per_s": None,
                "step_ms": predicted_step_ms(m, SHAPES, truth),
                "stack_group": "one",
            }
        )
        for m in MEASUREMENTS
        if m.role == "baseline"
    ]
    fit = fit_efficiency(synthetic, SHAPES)
    assert fit.rms_log_error < 0.01
    for m in synthetic:
        assert predicted_step_ms(m, SHAPES, fit.efficiency["one"]) == pytest.approx(
            m.step_ms, rel=0.02
        )


def test_baselines_fit_within_ten_percent():
    cal = trn2_calibration()
    for rid, published, predicted in cal.residuals:
        assert abs(predicted / published - 1) < 0.10, rid


def test_held_out_rows_are_the_speculative_ones_with_an_implied_acceptance():
    rows = held_out(trn2_calibration())
    assert {r.id for r in rows} == {m.id for m in MEASUREMENTS if m.role == "speculative"}
    for r in rows:
        assert math.isfinite(r.implied_acceptance_length) and r.published_speedup > 0
        assert (r.predicted_speedup is None) == (r.acceptance_length is None)


def test_report_lists_fit_residuals_and_held_out_rows():
    md = report_markdown(trn2_calibration())
    for m in MEASUREMENTS:
        assert m.id in md
