"""plan.batch_verdicts: speculation against plain at one batch is called only when it holds at the
edges of both held-out bands; otherwise the model says it cannot tell."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.plan.batch_verdicts import (
    BatchVerdict,
    Window,
    batch_verdicts,
    undecided_batches,
    verdicts_of,
    verdicts_text,
)

SETTINGS = settings(max_examples=200, deadline=None)


def one(speedup: float, spec_error: float | None, plain_error: float | None) -> BatchVerdict:
    [verdict] = batch_verdicts([Window(1, 3, speedup, spec_error)], {1: plain_error})
    return verdict


def test_speculation_is_sure_only_when_it_wins_with_both_bands_against_it() -> None:
    # 1.5 x 0.9 / 1.1 = 1.23 above 1: sure; 1.2 x 0.8 / 1.2 = 0.8: the bands hold both answers
    sure = one(1.5, 0.1, 0.1)
    assert (sure.verdict, sure.speedup_low, sure.speedup_high) == ("speculation", 1.5 * 0.9 / 1.1,
                                                                  1.5 * 1.1 / 0.9)  # fmt: skip
    assert one(1.2, 0.2, 0.2).verdict == "undecided"


def test_both_bands_count_speculations_and_plains() -> None:
    # 1.15 with a 10 % speculative band alone is sure (1.035); with plain's 20 % band alone it
    # may be 1.15 / 1.2 = 0.96
    assert one(1.15, 0.1, 0.0).verdict == "speculation"
    assert one(1.15, 0.0, 0.2).verdict == "undecided"
    assert one(0.8, 0.0, 0.2).verdict == "undecided"  # 0.8 / 0.8 = 1.0 is not below 1
    assert one(0.8, 0.1, 0.0).verdict == "plain"


def test_plain_is_sure_only_when_every_window_loses_with_both_bands_in_its_favour() -> None:
    windows = [Window(4, 1, 0.9, 0.05), Window(4, 7, 0.5, 0.05)]
    assert batch_verdicts(windows, {4: 0.05})[0].verdict == "plain"  # 0.9 x 1.05 / 0.95 = 0.995
    assert batch_verdicts(windows, {4: 0.1})[0].verdict == "undecided"  # 0.9 x 1.05 / 0.9 > 1


def test_a_tie_with_plain_is_no_gain() -> None:
    assert one(1.0, 0.0, 0.0).verdict == "undecided"


@pytest.mark.parametrize(("spec_error", "plain_error"), [(None, 0.1), (0.1, None), (None, None)])
def test_a_figure_without_held_out_data_decides_nothing(
    spec_error: float | None, plain_error: float | None
) -> None:
    for speedup in (0.1, 10.0):
        verdict = one(speedup, spec_error, plain_error)
        assert verdict.verdict == "undecided" and not verdict.sure
        assert (verdict.speedup_low, verdict.speedup_high) == (None, None)


def test_the_k_reported_is_the_fastest_and_ties_go_to_the_smaller_k() -> None:
    windows = [Window(2, 1, 1.6, 0.1), Window(2, 3, 1.6, 0.1), Window(2, 7, 1.4, 0.1)]
    [verdict] = batch_verdicts(windows, {2: 0.1})
    assert (verdict.k, verdict.speedup) == (1, 1.6)


def test_the_text_names_the_batch_the_verdict_the_k_and_the_edges() -> None:
    assert one(1.5, 0.1, 0.1).text() == "1: speculation (k=3 1.23x-1.83x)"
    assert one(1.5, None, 0.1).text() == "1: undecided (k=3 a band unknown)"
    assert one(1.5, 0.1, None).text() == "1: undecided (k=3 a band unknown)"


def test_one_verdict_per_batch_in_batch_order_and_none_without_a_window() -> None:
    windows = [Window(8, 3, 0.5, 0.1), Window(1, 3, 2.0, 0.1), Window(8, 7, 0.4, 0.1)]
    verdicts = batch_verdicts(windows, {1: 0.1, 8: 0.1, 16: 0.1})
    assert [(v.batch, v.verdict) for v in verdicts] == [(1, "speculation"), (8, "plain")]
    assert batch_verdicts([], {1: 0.1}) == []


speedups = st.floats(0.05, 20.0)
errors = st.floats(0.0, 0.95)


@SETTINGS
@given(speedups, errors, errors, errors, errors)
def test_wider_bands_never_make_the_model_surer(
    speedup: float, e_s: float, e_p: float, more_s: float, more_p: float
) -> None:
    narrow = one(speedup, e_s, e_p)
    wide = one(speedup, min(0.99, e_s + more_s), min(0.99, e_p + more_p))
    assert wide.verdict in (narrow.verdict, "undecided")


@SETTINGS
@given(speedups, errors, errors)
def test_a_sure_verdict_agrees_with_the_nominal_speedup_and_lies_inside_the_edges(
    speedup: float, e_s: float, e_p: float
) -> None:
    v = one(speedup, e_s, e_p)
    assert v.speedup_low is not None and v.speedup_high is not None
    assert v.speedup_low <= speedup <= v.speedup_high
    if v.verdict == "speculation":
        assert speedup > 1.0
    if v.verdict == "plain":
        assert speedup < 1.0


def test_a_grids_verdicts_ask_each_window_its_band_and_plain_its_own() -> None:
    """k = 0 points are plain's own, not windows; plain's band is asked at k = 0."""
    grid = [Window(1, 0, 1.0, None), Window(1, 3, 1.5, None), Window(8, 0, 1.0, None),
            Window(8, 3, 0.5, None)]  # fmt: skip
    asked: list[tuple[int, int]] = []

    def error(k: int, batch: int) -> float | None:
        asked.append((k, batch))
        return {0: 0.1, 3: 0.2}[k] if batch == 1 else None

    verdicts = verdicts_of(grid, error)
    assert [(v.batch, v.k, v.verdict) for v in verdicts] == [(1, 3, "speculation"),
                                                            (8, 3, "undecided")]  # fmt: skip
    assert (verdicts[0].speedup_low, verdicts[0].speedup_high) == (1.5 * 0.8 / 1.1, 1.5 * 1.2 / 0.9)
    assert sorted(asked) == [(0, 1), (0, 8), (3, 1), (3, 8)]
    assert verdicts_of([Window(1, 0, 1.0, None)], error) == []


def test_the_verdicts_read_as_one_line_and_the_undecided_batches_are_listed() -> None:
    verdicts = [one(1.5, 0.1, 0.1), one(1.2, 0.2, 0.2)]
    assert verdicts_text(verdicts) == (
        "1: speculation (k=3 1.23x-1.83x), 1: undecided (k=3 0.80x-1.80x)"
    )
    both = batch_verdicts([Window(2, 1, 1.2, 0.2), Window(4, 1, 1.1, 0.2)], {2: 0.2, 4: 0.2})
    assert undecided_batches(both) == "2, 4"
    assert undecided_batches([one(1.5, 0.1, 0.1)]) is None
    assert undecided_batches([]) is None
