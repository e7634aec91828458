"""How input is read: YAML 1.2 scalars, text kept as written, bounded size, aliases and output."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.problems import (
    ABSENT,
    MAX_LISTED,
    MAX_VALUE_CHARS,
    InputError,
    Problem,
    show,
)
from trnspec.boundary.user_input import (
    MAX_ALIASES,
    MAX_INPUT_BYTES,
    InputReadError,
    YamlFloat,
    YamlInt,
    as_text,
    load_yaml,
    parse_value,
    read_text_file,
)

RELAXED = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(
    ("raw", "value", "text"),
    [
        ("0123456", 123456, "0123456"),  # YAML 1.1 read this as octal 42798
        ("1.30", 1.3, "1.30"),
        ("0o17", 15, "0o17"),
        ("0x1F", 31, "0x1F"),
        ("-5", -5, "-5"),
        ("1e3", 1000.0, "1e3"),
    ],
)
def test_numbers_are_yaml_1_2_and_remember_their_text(raw: str, value: float, text: str) -> None:
    parsed = parse_value(raw)
    assert parsed == value and isinstance(parsed, YamlInt | YamlFloat)
    assert as_text(parsed) == text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("False", False),
        ("yes", "yes"),  # YAML 1.1 booleans are text in 1.2
        ("on", "on"),
        ("n", "n"),
        ("2024-01-01", "2024-01-01"),  # no timestamps
        ("1_000", "1_000"),  # no 1.1 underscores
        ("1:30", "1:30"),  # no sexagesimal
        ("null", None),
        ("", ""),
        ("[1, a]", [1, "a"]),
        ("{a: [unclosed", "{a: [unclosed"),  # not YAML: taken as written
    ],
)
def test_override_values_follow_one_rule(raw: str, expected: object) -> None:
    assert parse_value(raw) == expected


def test_tagged_numbers_survive_deepcopy_as_settings_overrides_need() -> None:
    data = load_yaml("a: 0123\nb: 1.30\n")
    copied = copy.deepcopy(data)
    assert as_text(copied["a"]) == "0123" and as_text(copied["b"]) == "1.30"


def test_nested_alias_bomb_is_refused_quickly() -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev, name = chr(96 + i), chr(97 + i)
        levels.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    with pytest.raises(InputReadError, match=f"more than {MAX_ALIASES} YAML aliases"):
        load_yaml("\n".join(levels))


def test_deep_nesting_and_oversized_text_are_refused() -> None:
    with pytest.raises(InputReadError, match=r"nested too deeply|not valid YAML"):
        load_yaml("[" * 100_000)
    with pytest.raises(InputReadError, match="larger than"):
        load_yaml("a: 1\n" * (MAX_INPUT_BYTES // 4))


def test_config_files_must_be_small_utf8(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputReadError, match=r"not UTF-8 text.*save it as UTF-8"):
        read_text_file(latin1)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_INPUT_BYTES + 1))
    with pytest.raises(InputReadError, match="larger than"):
        read_text_file(big)


def test_problem_values_are_truncated_and_control_characters_visible() -> None:
    assert len(show("x" * 10_000)) == MAX_VALUE_CHARS
    assert show("a\x1bb") == "'a\\x1bb'"
    assert show(" padded") == "' padded'" and show("") == "''"
    assert show("plain") == "plain" and show(None) == "None"
    nested: list = []
    for _ in range(30):
        nested = [nested, nested]
    assert len(show(nested)) <= MAX_VALUE_CHARS


def test_a_long_value_keeps_its_start_and_its_end() -> None:
    path = "/tmp/" + "d" * 200 + "/tune-report.json"
    shown = show(path)
    assert len(shown) == MAX_VALUE_CHARS
    assert shown.startswith("/tmp/ddd") and shown.endswith("d/tune-report.json") and "..." in shown


def test_a_problem_without_a_value_names_the_field_and_the_fix_alone() -> None:
    assert str(Problem("--endpoint/--local", ABSENT, "give exactly one")) == (
        "--endpoint/--local: give exactly one"
    )
    # None is what a flag not given or a field left empty holds: never shown as Python's "None"
    assert str(Problem("region", None, "set it")) == "region: set it"
    assert str(Problem("k", 0, "at least 1")) == "k=0: at least 1"  # a falsy value is a value
    assert str(Problem("name", "", "give one")) == "name='': give one"


def test_an_unreadable_input_not_yet_named_reads_as_its_reason_alone() -> None:
    err = InputReadError("not valid YAML (line 2)")
    assert [str(p) for p in err.problems] == ["input: not valid YAML (line 2)"]
    assert str(err.named("--config", "a.yaml")) == "--config=a.yaml: not valid YAML (line 2)"


def test_error_lists_at_most_max_listed_problems_and_counts_the_rest() -> None:
    err = InputError([Problem(f"k{i}", i, "unknown field") for i in range(1000)], "bad input:")
    lines = str(err).splitlines()
    assert lines[0] == "bad input:" and len(lines) == MAX_LISTED + 2
    assert lines[-1].strip() == f"... and {1000 - MAX_LISTED} more problems (fix these first)"
    assert len(err.problems) == 1000


@RELAXED
@given(st.text(max_size=200))
def test_any_override_text_parses_to_a_value_never_an_exception(raw: str) -> None:
    parse_value(raw)


@RELAXED
@given(st.binary(max_size=300))
def test_any_bytes_as_a_config_file_read_or_one_input_error(data: bytes) -> None:
    try:
        load_yaml(data.decode("utf-8", errors="replace"))
    except InputReadError as err:
        assert str(err)


# --- issue 24: finite numbers and unique keys ------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(["a", "b", "c", "<<"]), min_size=1, max_size=5),
    st.integers(0, 9),
)
def test_a_repeated_explicit_key_is_refused_naming_both_lines(keys, value):
    keys = [k for k in keys if k != "<<"] or ["a"]
    text = "".join(f"{k}: {value}\n" for k in keys)
    if len(set(keys)) == len(keys):
        assert set(load_yaml(text)) == set(keys)
    else:
        both_lines = r"duplicate key .* on line \d+ \(first on line \d+\)"
        with pytest.raises(InputReadError, match=both_lines):
            load_yaml(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from([".nan", ".NaN", ".inf", "-.Inf", "+.INF", "1e999", "-1e400", "1.5"]),
    )
)
def test_a_yaml_number_is_finite_or_refused(text):
    try:
        value = load_yaml(f"x: {text}\n")["x"]
    except InputReadError as exc:
        assert "not a finite number" in str(exc)
        return
    assert not isinstance(value, float) or math.isfinite(value)


def test_merged_keys_may_still_be_overridden():
    assert load_yaml("base: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n")["d"] == {"x": 2}


@pytest.mark.parametrize("text", ["&a [*a]", "&a {k: *a}", "x: &a [1, [*a]]"])
def test_a_yaml_alias_that_refers_to_its_own_node_is_refused(text: str) -> None:
    with pytest.raises(InputReadError, match="refers to the node that holds it"):
        load_yaml(text)


def test_a_yaml_alias_shared_by_two_keys_is_not_a_cycle() -> None:
    assert load_yaml("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}
