"""What predict and plan-deploy print about their own error: the band of a figure from sources the
fit never saw (wider where it extrapolates, unknown where no fold did as far), and "outside the
data" only where no published row of its stack lies."""

from __future__ import annotations

import math

import pytest
from trnspec.perf.error_bands import outside_data, params_b, source_band_for
from trnspec.perf.trn2_fit import refit_with, trn2_calibration
from trnspec.perf.validation import COVERAGE, POOLS, HeldOutRow, held_rate

CAL = trn2_calibration()

#: A calibration run's rows as `trnspec fit --add` reads them: plain Qwen3-4B on the plugin's
#: async scheduling at TP 4, two concurrencies, one study (made-up figures).
MEASURED = """
measurements:
  - id: measured-qwen3-4b-tp4-c1
    role: baseline
    source: s3://bucket/calibration/20261202T000000Z/trn2_rows.yaml
    quote: 'plain arm, concurrency 1: TPOT p50 9.1 ms'
    date: "2026-12-02"
    stack: vLLM Neuron plugin (async), trnspec calibration job
    stack_group: plugin
    target: Qwen3-4B
    instance: trn2.48xlarge
    replicas_per_instance: 2
    tp: 4
    lnc: 2
    batch: 1
    input_len: 512
    output_len: 256
    weight_bytes: 2
    tpot_ms: 9.1
  - id: measured-qwen3-4b-tp4-c4
    role: baseline
    source: s3://bucket/calibration/20261202T000000Z/trn2_rows.yaml
    quote: 'plain arm, concurrency 4: TPOT p50 10.4 ms'
    date: "2026-12-02"
    stack: vLLM Neuron plugin (async), trnspec calibration job
    stack_group: plugin
    target: Qwen3-4B
    instance: trn2.48xlarge
    replicas_per_instance: 2
    tp: 4
    lnc: 2
    batch: 4
    input_len: 512
    output_len: 256
    weight_bytes: 2
    tpot_ms: 10.4
"""


@pytest.mark.parametrize("m", CAL.measurements, ids=lambda m: m.id)
def test_a_query_at_a_published_rows_own_conditions_is_never_outside_the_data(m):
    target = CAL.shapes[m.target.lower()]
    assert outside_data(CAL, m.stack_group, target, m.tp, [m.batch], m.context_tokens) == []


def test_a_query_no_row_of_its_stack_covers_is_outside_the_data_on_that_axis_only():
    qwen4 = CAL.shapes["qwen3-4b"]
    out = outside_data(CAL, "plugin", qwen4, 4, [1], 640)
    assert [o.quantity for o in out] == ["tensor parallel size"]
    assert "tensor parallel size 4" in out[0].describe()


def _pool_band(pool: list[HeldOutRow], depth: int) -> float | None:
    """SOURCE_BAND_RULE on one pool, computed here: the ceil(0.8 (n + 1))-th smallest |error| of
    the n rows whose fold extrapolated at least `depth` axes, None when n is too small."""
    errors = sorted(abs(h.error) for h in pool if h.error is not None and h.depth >= depth)
    rank = math.ceil(COVERAGE * (len(errors) + 1) - 1e-9)
    return errors[rank - 1] if rank <= len(errors) else None


def test_a_figure_inside_the_data_takes_the_narrowest_pool_with_enough_held_out_errors():
    """DFlash on the synchronous plugin at TP 4, batch 1: inside the data, but its regime holds
    fewer errors than a quantile needs, so the band is its stack and method's."""
    qwen4 = CAL.shapes["qwen3-4b"]
    band = source_band_for(
        CAL, "plugin-sync", "dflash", 15, 1, tp=4, context_tokens=160, target=qwen4
    )
    assert band.outside == () and params_b(qwen4) < 10
    dflash = [h for h in CAL.validation if (h.stack_group, h.method) == ("plugin-sync", "dflash")]
    regime = [h for h in dflash if h.batch == 1 and h.tp <= 4 and h.model_params_b < 10]
    assert _pool_band(regime, 0) is None
    assert band.pool == POOLS[1]
    assert band.max_abs_error == _pool_band(dflash, 0) and band.max_abs_error is not None
    assert band.rows == len(dflash)


def test_an_extrapolated_figure_takes_only_the_errors_of_folds_that_extrapolated_as_far():
    """Plain Qwen3-4B on the async plugin at TP 4: no plugin row lies at TP 1-4, so the figure is
    one axis out, and its band is made of the errors of plain rows whose own fold was at least
    one axis out (every stack's: the plugin's two rows are too few), which is wider than the
    band of the same errors taken inside the data too."""
    qwen4 = CAL.shapes["qwen3-4b"]
    band = source_band_for(CAL, "plugin", "none", 0, 1, tp=4, context_tokens=640, target=qwen4)
    assert band.outside == ("tp",)
    plain = [h for h in CAL.validation if h.method == "none"]
    assert band.pool == POOLS[2]
    assert band.max_abs_error == _pool_band(plain, 1) and band.max_abs_error is not None
    assert band.max_abs_error > (_pool_band(plain, 0) or 0.0)
    # and how often bands of that kind (plain, extrapolated) held on unseen sources
    assert band.held == held_rate(CAL.folds, "none", 1) and band.held is not None
    assert f"held {band.held[0]} of {band.held[1]} figures of unseen sources" in band.describe()


def test_one_calibration_run_brings_its_regime_into_the_data_and_gives_it_a_band():
    """docs/performance.md: the rows of one measured run (one study) change the band of the
    regime they fall in; the plain plugin at TP 4 is outside the data in TP before."""
    qwen4 = CAL.shapes["qwen3-4b"]
    kw = {"tp": 4, "context_tokens": 640, "target": qwen4}
    before = source_band_for(CAL, "plugin", "none", 0, 1, **kw)
    assert before.outside == ("tp",)
    _, cal, _ = refit_with([MEASURED])
    after = source_band_for(cal, "plugin", "none", 0, 1, **kw)
    assert after.outside == ()
    assert after.max_abs_error is not None
    assert {"measured-qwen3-4b-tp4-c1", "measured-qwen3-4b-tp4-c4"} <= {
        h.id for h in cal.validation if h.error is not None
    }
    # a refit with measured rows skips the nested folds: how often bands held is not measured
    assert after.held is None
    assert outside_data(cal, "plugin", qwen4, 4, [1, 4], 640) == []


def test_the_band_of_a_plain_figure_inside_the_data_says_how_often_its_kind_held():
    qwen4 = CAL.shapes["qwen3-4b"]
    kw = {"tp": 4, "context_tokens": 160, "target": qwen4}
    band = source_band_for(CAL, "plugin-sync", "dflash", 0, 1, **kw)
    assert band.method == "none" and band.outside == () and band.max_abs_error is not None
    # inside the data, a plain figure: the folds' plain bands inside the data
    assert band.held == held_rate(CAL.folds, "none", 0) and band.held is not None
    assert f"held {band.held[0]} of {band.held[1]} figures of unseen sources" in band.describe()


def test_a_figure_of_a_stack_no_published_row_covers_is_unknown():
    qwen4 = CAL.shapes["qwen3-4b"]
    band = source_band_for(CAL, "nxdi-direct", "none", 0, 1, tp=4, target=qwen4)
    assert band.max_abs_error is None and "unknown" in band.describe()
    # no band, so no rate of bands held beside it
    assert band.held is None
