"""The published Trn2 data, the fit of the model's constants, and the held-out check."""

from __future__ import annotations

import dataclasses
import math

import pytest
from trnspec.perf.error_bands import source_band_for
from trnspec.perf.fit import THIRD_PASS, fit_constants, nnls
from trnspec.perf.published import data_text
from trnspec.perf.step_time import Efficiency
from trnspec.perf.trn2_fit import (
    CURRENT,
    FIT_FILE,
    Calibration,
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
from trnspec.perf.validation import COVERAGE, FoldBand, published_speedup, source_fold

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
        f"trnspec/{FIT_FILE} is stale: run python -m trnspec fit --write"
    )
    assert _stored_fit("0" * 64) is None


def test_a_fresh_fit_and_validation_reproduce_the_stored_ones_bit_for_bit():
    """(The nested source folds take a fit per pair of sources: one source's are refitted in
    test_a_refit_without_one_source_prints_bands_that_hold_its_rows.)"""
    text = data_text()
    stored = _stored_fit(data_digest(text))
    fresh = fit_published(text, folds=False)
    assert stored is not None and fresh.folds == ()
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


def _fitted_error(cal: Calibration, m: Measurement) -> float:
    """The fit's own error on a row it was fitted to, in the quantity predict prints for it: a
    baseline's step time, a speculative row's speedup over its published baseline (from its
    published acceptance)."""
    eff, by_id = cal.efficiency, {r.id: r for r in cal.measurements}
    step = predicted_step_ms(m, cal.shapes, eff[m.stack_group], cal.hardware)
    if m.role == "baseline":
        return step / m.published_step_ms - 1
    base = by_id[m.baseline or ""]
    base_step = predicted_step_ms(base, cal.shapes, eff[base.stack_group], cal.hardware)
    return (m.acceptance_length or 0.0) * base_step / step / published_speedup(m, base) - 1


@pytest.mark.parametrize("rid", [r for r, _, _ in trn2_calibration().residuals])
def test_every_fitted_figure_lies_inside_the_band_predict_prints_for_it(rid: str):
    """The fit errs on the rows it saw by no more than the band from unseen sources printed at
    their own conditions. (Not a fixed 30 % on step time: on the 51-row data the synchronous
    plugin's floor, 12.2 ms, is pinned by the DFlash examples on 12-vCPU hosts, since the
    plugin-nxdi rows on the same hosts put the host share at 4.5 ms, not 12.9; so the GPT-OSS
    EAGLE3 step on a 192-vCPU trn2.48xlarge fits 43 % slow, while its speedup, the figure
    predict prints, is 26 % off inside its +/-34 % band.)"""
    cal = trn2_calibration()
    m = next(r for r in cal.measurements if r.id == rid)
    band = source_band_for(
        cal, m.stack_group, m.method, m.k, m.batch,
        tp=m.tp, context_tokens=m.context_tokens, target=cal.shapes[m.target.lower()],
    )  # fmt: skip
    assert band.max_abs_error is not None, band.describe()
    assert abs(_fitted_error(cal, m)) <= band.max_abs_error, band.describe()


def test_the_step_time_the_fit_misses_most_is_the_one_its_floors_cannot_share():
    """The one fitted step time off by more than 30 %: the synchronous EAGLE3 arm of GPT-OSS on
    a 192-vCPU host, priced with the floor the 12-vCPU DFlash examples set (see above)."""
    off = {
        rid: pred / pub - 1
        for rid, pub, pred in trn2_calibration().residuals
        if abs(pred / pub - 1) > 0.30
    }
    assert list(off) == ["gpt-oss-120b-tp16-c1-eagle3-k1"]
    assert off["gpt-oss-120b-tp16-c1-eagle3-k1"] > 0  # priced slower than published


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
    """docs/performance.md quotes `python -m trnspec fit` of the shipped data; a refit
    without regenerating it would leave the published error tables stale."""
    from pathlib import Path

    docs = Path(__file__).parents[3] / "docs" / "performance.md"
    assert report_markdown(trn2_calibration()) in docs.read_text(encoding="utf-8")


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


#: A band rate is refuted when so few figures fell inside that a rate of COVERAGE would give as
#: few at most this often (one-sided).
SPREAD = 0.05


def _held(folds: tuple[FoldBand, ...] | list[FoldBand]) -> tuple[int, int]:
    banded = [f for f in folds if f.band is not None and f.error is not None]
    return sum(f.inside for f in banded), len(banded)


def test_a_refit_without_one_source_prints_bands_that_hold_its_rows():
    """The largest study removed: the fit, the validation and the band of each of its rows are
    recomputed without it, equal the stored nested fold bit for bit, and hold its rows at the
    rate the bands are made for (COVERAGE, which docs/performance.md quotes) within the binomial
    spread."""
    cal = trn2_calibration()
    units = [m.held_out_unit for m in MEASUREMENTS if m.role == "baseline"]
    source = max(dict.fromkeys(units), key=units.count)
    fresh = source_fold(MEASUREMENTS, SHAPES, CURRENT, source, cal.validation)
    assert len(fresh) >= 4
    assert fresh == tuple(f for f in cal.folds if f.source == source)
    inside, banded = _held(fresh)
    assert banded >= 3
    assert binomial_cdf(inside, banded, COVERAGE) >= SPREAD, (inside, banded)


def test_the_stored_bands_hold_figures_of_unseen_sources_at_the_claimed_rate():
    cal = trn2_calibration()
    assert {f.id for f in cal.folds} == {h.id for h in cal.validation}
    inside, banded = _held(cal.folds)
    assert banded >= len(cal.folds) // 2
    assert binomial_cdf(inside, banded, COVERAGE) >= SPREAD, (inside, banded)
    assert f"hold {COVERAGE:.0%} of figures from unseen sources" in report_markdown(cal)


def test_a_row_measured_without_a_server_must_sit_in_a_direct_stack_and_back():
    """NxD Inference measured directly shares no floor with any vLLM-served stack."""
    row = "    stack_group: nxdi-fork\n    target: Llama-3.1-70B   # Llama-3.3-70B-Instruct"
    assert row in data_text()
    direct = data_text().replace(row, row.replace("nxdi-fork", "nxdi-fork\n    served: false"), 1)
    with pytest.raises(ValueError, match="llama33-70b-tp64-bs1: stack_group='nxdi-fork' with se"):
        load_published(direct)
    moved = direct.replace("nxdi-fork\n    served: false", "nxdi-direct\n    served: false", 1)
    rows, _ = load_published(moved)
    assert next(m for m in rows if m.id == "llama33-70b-tp64-bs1").stack_group == "nxdi-direct"
    served = data_text().replace(row, row.replace("nxdi-fork", "nxdi-direct"), 1)
    with pytest.raises(ValueError, match="served=True; a row measured through a vLLM server"):
        load_published(served)
