"""The published Trn2 data, the fit of the model's constants, and the held-out check."""

from __future__ import annotations

import dataclasses

import pytest
from trnspec.perf.calibrate import (
    FIT_FILE,
    Measurement,
    _stored_fit,
    data_digest,
    fit_published,
    implied_acceptance,
    load_published,
    predicted_step_ms,
    report_markdown,
    trn2_calibration,
)
from trnspec.perf.fit import THIRD_PASS, fit_constants, nnls
from trnspec.perf.published import data_text
from trnspec.perf.step_time import Efficiency

MEASUREMENTS, SHAPES = load_published()


@pytest.mark.parametrize("m", MEASUREMENTS, ids=lambda m: m.id)
def test_every_published_figure_names_its_source_quote_date_and_conditions(m: Measurement):
    assert m.source.startswith("https://") and m.date and m.stack
    assert len(m.quote) >= 10
    assert m.tp >= 1 and m.batch >= 1 and m.input_len > 0 and m.output_len > 0
    assert m.tpot_ms or m.step_ms or m.output_tokens_per_s
    if m.role == "speculative":
        assert m.method != "none" and m.k >= 1
        assert m.baseline in {b.id for b in MEASUREMENTS if b.role == "baseline"}


def test_a_row_without_a_quote_is_refused_naming_the_field():
    text = data_text().replace("    quote: 'No speculative decoding,814.2,19.6,36'\n", "", 1)
    with pytest.raises(ValueError, match="llama33-70b-tp64-bs1: quote=None"):
        load_published(text)


def test_the_stored_fit_belongs_to_the_shipped_data():
    assert _stored_fit(data_digest(data_text())) is not None, (
        f"trnspec/{FIT_FILE} is stale: run python -m trnspec.cli.calibrate --write"
    )
    assert _stored_fit("0" * 64) is None


def test_a_fresh_fit_and_validation_reproduce_the_stored_ones_bit_for_bit():
    text = data_text()
    stored = _stored_fit(data_digest(text))
    fresh = fit_published(text)
    assert stored is not None
    assert fresh.fit.efficiency == stored.fit.efficiency
    assert fresh.fit.rms_rel_error == stored.fit.rms_rel_error
    assert fresh.validation == stored.validation
    assert fresh.validation_before == stored.validation_before


def test_nnls_solves_a_known_nonnegative_system_and_clips_a_negative_coefficient():
    cols = [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    assert nnls(cols, [2.0, 3.0, 5.0]) == pytest.approx([2.0, 3.0])
    # the unconstrained answer would be (-1, 1): the constrained one drops the first column
    x = nnls([[1.0, 0.0], [1.0, 1.0]], [-1.0, 0.0])
    assert x[0] == 0.0 and x[1] == pytest.approx(0.0, abs=1e-12)


def test_the_fit_recovers_constants_that_generated_the_data():
    truth = Efficiency(
        1.0,
        COMPUTE := 0.1778279410038923,
        0.012,
        0.0,
        sequence_overhead_s=8e-4,
        context_token_s=9e-9,
        logit_pair_s=1e-10,
        host_share_s=0.009,
    )
    rows = [
        dataclasses.replace(
            m,
            tpot_ms=None,
            output_tokens_per_s=None,
            acceptance_length=None,
            role="baseline",
            step_ms=predicted_step_ms(m, SHAPES, truth),
            stack_group="one",
        )
        for m in MEASUREMENTS
    ]
    fit = fit_constants(rows, SHAPES, THIRD_PASS)
    assert fit.rms_rel_error < 1e-6
    eff = fit.efficiency["one"]
    assert eff.compute == COMPUTE and eff.memory == 1.0
    assert eff.host_share_s == pytest.approx(0.009, rel=1e-6)
    for m in rows:
        assert predicted_step_ms(m, SHAPES, eff) == pytest.approx(m.step_ms, rel=1e-6)


def test_fitted_rows_are_within_thirty_percent():
    for rid, published, predicted in trn2_calibration().residuals:
        assert abs(predicted / published - 1) < 0.30, rid


def test_every_held_out_row_is_predicted_or_names_why_not():
    cal = trn2_calibration()
    assert {h.id for h in cal.validation} == {
        m.id for m in MEASUREMENTS if m.role == "baseline" or m.acceptance_length is not None
    }
    for h in cal.validation:
        assert (h.predicted is None) == bool(h.reason)


def test_every_speculative_row_reports_the_acceptance_the_model_needs():
    rows = implied_acceptance(trn2_calibration())
    assert {r.id for r in rows} == {m.id for m in MEASUREMENTS if m.role == "speculative"}


def test_report_lists_every_row_and_both_held_out_tables():
    md = report_markdown(trn2_calibration())
    for m in MEASUREMENTS:
        assert m.id in md
    assert "(before)" in md and "this model (after)" in md


def test_the_docs_show_the_report_of_the_shipped_fit():
    """docs/performance.md quotes `python -m trnspec.cli.calibrate` of the shipped data; a refit
    without regenerating it would leave the published error tables stale."""
    from pathlib import Path

    docs = Path(__file__).parents[3] / "docs" / "performance.md"
    assert report_markdown(trn2_calibration()) in docs.read_text(encoding="utf-8")
