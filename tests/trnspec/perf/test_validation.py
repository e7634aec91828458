"""Leave-one-source-out validation: what is held out together, the regimes fixed before the fit,
and the band a query gets (stated on made-up held-out rows, then on the shipped fit)."""

from __future__ import annotations

import dataclasses

import pytest
from trnspec.perf.calibrate import trn2_calibration
from trnspec.perf.fit import THIRD_PASS
from trnspec.perf.published import load_published
from trnspec.perf.validation import (
    AXES,
    Coordinates,
    HeldOutRow,
    band_of,
    coordinates,
    error_band,
    leave_one_source_out,
    range_of,
    regime_summaries,
)

MEASUREMENTS, SHAPES = load_published()


def row(rid: str, error: float | None, **where: object) -> HeldOutRow:
    base = {"stack_group": "s", "method": "none", "batch": 1, "tp": 4}
    base |= {"context_tokens": 500, "model_params_b": 8.0} | where
    return HeldOutRow(
        rid,
        "src",
        str(base["stack_group"]),
        str(base["method"]),
        int(base["batch"]),  # type: ignore[arg-type]
        "step_ms",
        10.0,
        None if error is None else 10.0 * (1 + error),
        "" if error is not None else "no floor",
        int(base["tp"]),  # type: ignore[arg-type]
        int(base["context_tokens"]),  # type: ignore[arg-type]
        float(base["model_params_b"]),  # type: ignore[arg-type]
    )


ROWS = (
    row("a", 0.10),
    row("b", -0.30, batch=4),
    row("c", 0.05, tp=64, context_tokens=10_000, model_params_b=70.0),
    row("d", None),
    row("e", 0.50, method="dflash"),
)


def test_every_value_of_an_axis_falls_in_exactly_one_range():
    for axis, ranges in AXES.items():
        assert [r[0] for r in ranges] == sorted(r[0] for r in ranges), axis
        for v in (1, 3, 4, 4.5, 5, 6, 16, 24, 63, 64, 1023.5, 1024, 9000, 9.995, 40.0, 405.0):
            r = range_of(axis, v)
            assert r in ranges and r[0] <= v
            later = ranges[ranges.index(r) + 1 :]
            assert all(v < lo for lo, _ in later), (axis, v)


def test_a_query_inside_the_data_gets_the_worst_error_of_its_own_regime_only():
    band = band_of(ROWS, Coordinates("s", "none", 4, 1, 300, 7.0))
    assert band.outside == () and not band.extrapolated
    assert band.rows == 1 and band.max_abs_error == pytest.approx(0.10)
    assert band.unpredicted == ("d",)
    # the batch-4 row and the speculative row are other regimes
    assert band_of(ROWS, Coordinates("s", "none", 2, 3, 300, 7.0)).max_abs_error == pytest.approx(
        0.30
    )


def test_outside_the_data_is_said_only_on_the_axes_no_row_covers():
    band = band_of(ROWS, Coordinates("s", "none", 16, 1, 300, 7.0))
    assert band.outside == ("tp",) and band.extrapolated
    assert "outside the data in tensor parallel size" in band.describe()
    for h in ROWS:
        assert band_of(ROWS, coordinates(h)).outside == ()


def test_a_regime_without_a_predicted_row_has_no_band_and_says_so():
    band = band_of(ROWS, Coordinates("s", "eagle3", 4, 1, 300, 7.0))
    assert band.max_abs_error is None and "no held-out error" in band.describe()


def test_an_axis_not_given_matches_every_range():
    assert error_band(ROWS, "s", "none", 1).max_abs_error == pytest.approx(0.10)
    assert error_band(ROWS, "s", "none", 1).rows == 2  # rows a and c: any TP, context, size


def test_the_summaries_count_rows_within_the_goal_per_stack_and_range():
    summaries = {(r.axis, r.label): r for r in regime_summaries(ROWS)}
    s = summaries[("stack", "s")]
    assert (s.rows, s.predicted, s.within) == (5, 4, 2)
    assert s.mean_abs_error == pytest.approx((0.10 + 0.30 + 0.05 + 0.50) / 4)
    assert not s.meets_goal


def test_a_held_out_row_is_never_predicted_from_its_own_study():
    """Changing every figure of one study changes no prediction of that study's rows."""
    plugin = [m for m in MEASUREMENTS if m.stack_group in ("plugin", "plugin-sync")]
    # a study of more than one source file (a README and the launch script beside it)
    study = next(m.held_out_unit for m in plugin if m.study and m.study != m.source)
    bent = [
        dataclasses.replace(
            m,
            tpot_ms=m.tpot_ms and m.tpot_ms * 3,
            step_ms=m.step_ms and m.step_ms * 3,
            output_tokens_per_s=m.output_tokens_per_s and m.output_tokens_per_s / 3,
        )
        if m.held_out_unit == study
        else m
        for m in plugin
    ]
    before = {h.id: h.predicted for h in leave_one_source_out(plugin, SHAPES, THIRD_PASS)}
    after = leave_one_source_out(bent, SHAPES, THIRD_PASS)
    own = [h for h in after if h.source == study and h.quantity == "step_ms"]
    assert own
    for h in own:
        assert h.predicted == before[h.id]


def test_every_stack_of_the_shipped_data_has_a_held_out_prediction():
    """Each stack has at least two studies, so each has a floor left when one is held out."""
    summaries = [r for r in regime_summaries(trn2_calibration().validation) if r.axis == "stack"]
    assert summaries
    for r in summaries:
        assert r.predicted >= 1, r.label
