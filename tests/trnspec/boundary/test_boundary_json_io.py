"""Properties of trnspec.boundary.json_io: finite numbers only, depth and size bounded, both
ways."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.json_io import MAX_DEPTH, depth, dumps, loads, strict

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


finite_json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)
#: The forms the product's sites write (json.dumps's arguments, as json_io passes them on).
forms = st.fixed_dictionaries(
    {
        "sort_keys": st.booleans(),
        "separators": st.sampled_from([None, (",", ":"), (", ", ": ")]),
    }
)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


@SETTINGS
@given(json_values)
def test_written_json_is_strict_json_with_finite_numbers(value):
    assert _finite(_strict(dumps(value)))


@SETTINGS
@given(st.one_of(st.text(max_size=60), json_values.map(json.dumps)))
def test_read_json_has_finite_numbers_and_bounded_depth_or_one_line(text):
    try:
        value = loads(text, "--from-json")
    except BoundaryError as exc:
        assert str(exc).startswith("--from-json=") and "\n" not in str(exc)
        return
    assert _finite(value)
    assert depth(json.dumps(value)) <= MAX_DEPTH


@SETTINGS
@given(st.integers(0, 3 * MAX_DEPTH), st.sampled_from(["[", '{"a":']))
def test_nesting_deeper_than_the_limit_is_refused_and_never_a_recursion_error(levels, opener):
    closer = "]" if opener == "[" else "}"
    text = opener * levels + "1" + closer * levels
    if levels > MAX_DEPTH:
        with pytest.raises(BoundaryError, match="nested deeper"):
            loads(text, "line 1")
    else:
        loads(text, "line 1")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"x": -Infinity}', "1e999", "[1e400]"])
def test_non_finite_numbers_are_refused_on_read(text):
    with pytest.raises(BoundaryError):
        loads(text, "tune.json")


def test_a_hundred_thousand_brackets_are_refused_quickly():
    with pytest.raises(BoundaryError, match="nested deeper"):
        loads("[" * 100_000, "--dataset line 1")


@SETTINGS
@given(finite_json_values, st.sampled_from([None, 1, 2]), forms)
def test_a_finite_document_is_written_byte_for_byte_as_json_dumps_writes_it(value, indent, form):
    """The sites moved to json_io kept their outputs: the same text, a newline unless asked."""
    expected = json.dumps(value, indent=indent, **form)
    assert dumps(value, indent, **form) == expected + "\n"
    assert dumps(value, indent, newline=False, **form) == expected


def _nulled(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    return value


@SETTINGS
@given(json_values)
def test_a_document_writes_each_non_finite_number_as_null_and_nothing_else_changes(value):
    assert _strict(dumps(value, None)) == _nulled(value)


@SETTINGS
@given(finite_json_values, forms)
def test_strict_text_of_finite_values_is_json_dumps_on_one_line(value, form):
    assert strict(value, **form) == json.dumps(value, **form)


@SETTINGS
@given(finite_json_values, non_finite, st.booleans())
def test_strict_refuses_a_non_finite_number_wherever_it_is(value, bad, in_object):
    document = {"x": [value, {"y": bad}]} if in_object else [value, bad]
    with pytest.raises(ValueError) as refused:
        strict(document, sort_keys=True)
    where = "$.x[1].y" if in_object else "$[1]"
    assert str(refused.value).startswith(f"{where} is {bad!r}, not a finite number")


def test_strict_names_the_first_non_finite_number_of_a_tuple_and_the_fix():
    with pytest.raises(ValueError, match=r"^\$\.k\[2\] is -inf, .*fix the value upstream$"):
        strict({"k": (1.0, 2, -math.inf, math.nan)})


def test_strict_gives_a_circular_value_jsons_own_error_not_a_recursion_error():
    loop: list[object] = [1.0]
    loop.append(loop)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        strict({"k": loop})
