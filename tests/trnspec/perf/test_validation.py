"""Leave-one-source-out validation: what is held out together, the regimes fixed before the fit,
and the band a query gets (stated on made-up held-out rows, then on the shipped fit)."""

from __future__ import annotations

import dataclasses

import pytest
from trnspec.perf.fit import THIRD_PASS
from trnspec.perf.published import load_published
from trnspec.perf.trn2_fit import trn2_calibration
from trnspec.perf.validation import (
    AXES,
    POOLS,
    Coordinates,
    FoldBand,
    HeldOutRow,
    _fold_depth,
    band_of,
    conformal_rank,
    coordinates,
    fold_summary,
    held_rate,
    leave_one_source_out,
    ordinal,
    predictable,
    range_of,
    regime_summaries,
    source_band,
    source_error_band,
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
    query = Coordinates("s", "none", 4, 1, 300, 7.0)
    assert band_of(ROWS, query, ["batch"]).max_abs_error == pytest.approx(0.10)
    assert band_of(ROWS, query, ["batch"]).rows == 2  # rows a and c: any TP, context, size
    # the same for the band from unseen sources: TP, context and size not given, the TP-64 rows
    # are in the query's regime (4 errors: the largest), and the query is outside nothing
    rows = [at("t4", 0.05), *(at(f"t64-{i}", 0.2 * (i + 1), tp=64) for i in range(3))]
    band = source_error_band(rows, "s", "none", 1)
    assert band.pool == POOLS[0] and band.rows == 4 and band.outside == ()
    assert band.max_abs_error == pytest.approx(0.6)
    assert source_error_band(rows, "s", "none", 1, tp=4).pool == POOLS[1]


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


# ------------------------------------------------------------------- bands from unseen sources


def at(rid: str, error: float, depth: int = 0, **where: object) -> HeldOutRow:
    return dataclasses.replace(row(rid, error, **where), depth=depth)


def test_the_band_is_the_conformal_quantile_so_that_four_of_five_new_figures_fall_inside():
    # ceil(0.8 (n + 1)): 3 errors are too few, of 4 the largest, of 9 the 8th smallest
    assert [conformal_rank(n) for n in (1, 2, 3, 4, 9, 19)] == [None, None, None, 4, 8, 16]
    errors = (0.01, -0.02, 0.03, -0.04, 0.05, -0.06, 0.07, -0.08, 0.50)
    rows = [at(f"r{i}", e) for i, e in enumerate(errors)]
    band = source_band(rows, Coordinates("s", "none", 4, 1, 300, 7.0))
    assert band.max_abs_error == pytest.approx(0.08) and band.rank == 8 and band.rows == 9
    assert band.pool == POOLS[0] and "8th smallest of 9 held-out errors" in band.describe()


def test_too_few_errors_anywhere_leave_the_figure_unknown_and_say_measure():
    rows = [at("a", 0.1), at("b", 0.2), at("c", -0.1)]
    band = source_band(rows, Coordinates("s", "none", 4, 1, 300, 7.0))
    assert band.max_abs_error is None and band.half_width is None
    assert "unknown" in band.describe() and "measure it" in band.describe()


def test_a_regime_with_too_few_errors_takes_its_stacks_then_every_stacks_of_its_kind():
    regime = [at(f"r{i}", 0.01 * (i + 1)) for i in range(2)]  # TP 4, batch 1
    stack = [at(f"s{i}", 0.10 * (i + 1), batch=4) for i in range(2)]  # batch 2-4
    other = [at(f"o{i}", 0.30, stack_group="t") for i in range(3)]
    spec = [at(f"x{i}", 0.90, method="dflash") for i in range(9)]
    query = Coordinates("s", "none", 4, 1, 300, 7.0)
    band = source_band([*regime, *stack, *spec], query)
    assert band.pool == POOLS[1] and band.rows == 4 and band.max_abs_error == pytest.approx(0.2)
    band = source_band([*regime, *other, *spec], query)
    # the speculative errors (a speedup's) never widen a plain band
    assert band.pool == POOLS[2] and band.rows == 5 and band.max_abs_error == pytest.approx(0.3)


def test_an_extrapolated_query_takes_the_errors_of_folds_that_extrapolated_as_far():
    inside = [at(f"i{i}", 0.05) for i in range(9)]
    one = [at(f"e{i}", 0.40, depth=1) for i in range(3)]
    two = [at(f"f{i}", 0.60, depth=2) for i in range(2)]
    rows = [*inside, *one, *two]
    # inside the data: every held-out error counts (14: the 12th smallest)
    near = source_band(rows, Coordinates("s", "none", 4, 1, 300, 7.0))
    assert near.outside == () and near.max_abs_error == pytest.approx(0.40)
    # TP 64 lies in no range of the stack: only folds that extrapolated on >= 1 axis (5 rows)
    far = source_band(rows, Coordinates("s", "none", 64, 1, 300, 7.0))
    assert far.outside == ("tp",) and far.rows == 5 and far.max_abs_error == pytest.approx(0.60)
    # TP and batch outside: 2 folds extrapolated that far, too few: unknown
    farther = source_band(rows, Coordinates("s", "none", 64, 32, 300, 7.0))
    assert farther.outside == ("tp", "batch") and farther.max_abs_error is None


def test_a_stack_without_held_out_rows_is_unknown_on_every_axis():
    rows = [at(f"r{i}", 0.05) for i in range(9)]
    band = source_error_band(rows, "nxdi-direct", "none", 1, 4, 300, 7.0)
    assert band.max_abs_error is None and band.outside == tuple(AXES)


def test_a_held_out_rows_depth_counts_the_axes_its_stack_has_no_row_of_in_the_fold():
    llama = next(m for m in MEASUREMENTS if m.id == "llama31-8b-tp4-c1")
    seen = [m for m in MEASUREMENTS if m.held_out_unit != llama.held_out_unit and predictable(m)]
    # another study of the stack (Qwen3-4B, TP 4, batch 1) covers every axis
    assert _fold_depth(llama, seen, SHAPES) == 0
    far = dataclasses.replace(llama, tp=64, batch=32)
    assert _fold_depth(far, seen, SHAPES) == 2
    alone = [m for m in seen if m.stack_group != llama.stack_group]
    assert _fold_depth(llama, alone, SHAPES) == len(AXES)


def test_a_fold_band_is_inside_only_with_a_band_that_holds_the_error():
    f = FoldBand("a", "s", "g", "plain", 0, 0.2, 0.1, 0.25)
    assert f.inside and not f.inside_before
    assert not dataclasses.replace(f, band=None).inside
    assert not dataclasses.replace(f, error=None).inside
    summary = fold_summary("x", [f, dataclasses.replace(f, error=-0.3)])
    assert (summary.with_band, summary.inside, summary.within) == (2, 1, 1)
    assert summary.median_band == pytest.approx(0.25)


def test_the_held_rate_counts_the_folds_of_the_same_kind_and_extrapolation_only():
    f = FoldBand("a", "s", "g", "plain", 0, 0.1, None, 0.2)
    folds = [
        f,
        dataclasses.replace(f, error=0.3),  # outside its band
        dataclasses.replace(f, band=None),  # unknown: not counted
        dataclasses.replace(f, depth=2),  # extrapolated
        dataclasses.replace(f, kind="speculative", error=0.5),
    ]
    assert held_rate(folds, "none", 0) == (1, 2)
    assert held_rate(folds, "none", 1) == (1, 1)
    assert held_rate(folds, "dflash", 0) == (0, 1)
    assert held_rate(folds, "dflash", 3) is None


def test_a_bands_rank_reads_as_an_english_ordinal():
    ranks = (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 24, 101, 111, 112)
    assert [ordinal(n) for n in ranks] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th",
        "21st", "22nd", "23rd", "24th", "101st", "111th", "112th",
    ]  # fmt: skip
