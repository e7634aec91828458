"""Properties of trnspec.boundary.numbers: whatever comes in, out comes a finite number in its
range, or one BoundaryError line naming the field."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import (
    MAX_COUNT,
    finite_in,
    float_arg,
    int_arg,
    parse_int_list,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

anything = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.booleans(),
    st.text(max_size=20),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
bounds = st.one_of(st.none(), st.floats(-1e6, 1e6))
number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "+Inf", "1e9", "1e999", "", " ", "0x10", "1_0"]),
    st.text(max_size=12),
)


@SETTINGS
@given(anything, bounds, bounds, st.booleans())
def test_finite_in_returns_a_finite_number_in_range_or_one_line_naming_the_field(
    value, lo, hi, lo_open
):
    try:
        number = finite_in(value, "--x", lo, hi, lo_open=lo_open)
    except BoundaryError as exc:
        assert str(exc).startswith(("--x=", "--x:")) and "\n" not in str(exc)
        return
    assert math.isfinite(number) and not isinstance(value, bool)
    assert lo is None or (number > lo if lo_open else number >= lo)
    assert hi is None or number <= hi


@SETTINGS
@given(number_text, st.booleans())
def test_a_float_flag_is_finite_and_positive_or_an_argparse_error(text, allow_inf):
    parse = float_arg(0, lo_open=True, allow_inf=allow_inf)
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert "\n" not in str(exc) and "must be" in str(exc)
        return
    assert value > 0
    assert math.isfinite(value) or (allow_inf and value == math.inf)


@SETTINGS
@given(number_text)
def test_a_count_flag_is_an_integer_within_max_count(text):
    try:
        value = int_arg(1)(text)
    except argparse.ArgumentTypeError:
        return
    assert isinstance(value, int) and 1 <= value <= MAX_COUNT


@SETTINGS
@given(st.one_of(st.text(max_size=40), st.lists(number_text, max_size=70).map(",".join)))
def test_a_list_flag_is_1_to_64_integers_in_range_or_one_line(text):
    try:
        values = parse_int_list("--concurrency", text)
    except BoundaryError as exc:
        assert str(exc).startswith(("--concurrency=", "--concurrency:")) and "\n" not in str(exc)
        return
    assert 1 <= len(values) <= 64 and all(1 <= v <= MAX_COUNT for v in values)


@pytest.mark.parametrize("text", ["1e9", "1000000000", "nan", "-1", "0"])
def test_concurrency_like_1e9_is_refused(text):
    with pytest.raises(BoundaryError):
        parse_int_list("--concurrency", text)
