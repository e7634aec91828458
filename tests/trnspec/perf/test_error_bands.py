"""What predict and plan-deploy print about their own error: the band of a query's regime, and
"outside the data" only where no published row of its stack lies."""

from __future__ import annotations

import pytest
from trnspec.perf.error_bands import band_for, outside_data, params_b, source_band_for
from trnspec.perf.trn2_fit import refit_with, trn2_calibration
from trnspec.perf.validation import held_rate

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


def test_the_band_of_a_figure_is_that_of_its_full_regime():
    qwen4 = CAL.shapes["qwen3-4b"]
    band = band_for(CAL, "plugin-sync", "dflash", 15, 1, tp=4, context_tokens=160, target=qwen4)
    assert band.outside == () and band.max_abs_error is not None
    same = [
        h
        for h in CAL.validation
        if h.stack_group == "plugin-sync" and h.method == "dflash" and h.batch == 1
    ]
    assert band.max_abs_error == pytest.approx(max(abs(h.error or 0) for h in same))
    assert params_b(qwen4) < 10


def test_one_calibration_run_brings_its_regime_into_the_data_and_gives_it_a_band():
    """docs/performance.md: the rows of one measured run (one study) change the band of the
    regime they fall in; the plain plugin at TP 4 has none before."""
    qwen4 = CAL.shapes["qwen3-4b"]
    before = band_for(CAL, "plugin", "none", 0, 1, tp=4, context_tokens=640, target=qwen4)
    assert before.outside == ("tp",)
    _, cal, _ = refit_with([MEASURED])
    after = band_for(cal, "plugin", "none", 0, 1, tp=4, context_tokens=640, target=qwen4)
    assert after.outside == ()
    assert after.rows >= 1
    assert outside_data(cal, "plugin", qwen4, 4, [1, 4], 640) == []


def test_the_band_from_unseen_sources_says_how_often_its_kind_held_and_keeps_band_fors_call():
    qwen4 = CAL.shapes["qwen3-4b"]
    kw = {"tp": 4, "context_tokens": 160, "target": qwen4}
    band = source_band_for(CAL, "plugin-sync", "dflash", 0, 1, **kw)
    assert band.method == "none" and band.outside == () and band.max_abs_error is not None
    # inside the data, a plain figure: the folds' plain bands inside the data
    assert band.held == held_rate(CAL.folds, "none", 0) and band.held is not None
    assert f"held {band.held[0]} of {band.held[1]} figures of unseen sources" in band.describe()
    # the same query by band_for (the rule before issue 49) is another number
    assert band_for(CAL, "plugin-sync", "dflash", 0, 1, **kw).pool == ""


def test_a_figure_of_a_stack_no_published_row_covers_is_unknown():
    qwen4 = CAL.shapes["qwen3-4b"]
    band = source_band_for(CAL, "nxdi-direct", "none", 0, 1, tp=4, target=qwen4)
    assert band.max_abs_error is None and "unknown" in band.describe()
