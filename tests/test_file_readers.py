"""Properties of the file readers every command uses (Hypothesis, no deadlines): whatever bytes a
file holds, a reader returns a value that keeps the boundary's promises (finite numbers, bounded
nesting, booleans never numbers) or refuses it with an InputError (exit 2, one line per
problem), never another exception."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trnspec.boundary.files import nesting, read_json, read_yaml
from trnspec.boundary.json_io import MAX_DEPTH
from trnspec.boundary.problems import InputError
from trnspec.cli.fit import read_rows_file
from trnspec.plan.readers.evidence import tune_report_alpha

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
#: Texts that look like what a hostile or careless file holds.
YAMLISH = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            ".nan",
            ".inf",
            "-.inf",
            "1.0e+999",
            "a: 1\na: 2\n",
            "- [" * 200,
            "&a [*a]",
            "tp: true",
            "{a: !!python/object:os.system x}",
            "\x1b[31m: x",
        ]
    ),
)


def _finite_everywhere(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite_everywhere(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite_everywhere(v) for v in value)
    return True


def _write(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "input"
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    path.write_bytes(data)
    return path


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), JSON_VALUES.map(lambda v: json.dumps(v))))
def test_read_json_returns_finite_bounded_values_or_refuses(tmp_path: Path, data: Any) -> None:
    path = _write(tmp_path, data)
    try:
        value = read_json(path, "--file")
    except InputError as err:
        assert err.problems and err.problems[0].field == "--file"
        return
    assert _finite_everywhere(value) and nesting(value) <= MAX_DEPTH


@SETTINGS
@given(value=JSON_VALUES)
def test_read_json_gives_back_every_finite_document_unchanged(tmp_path: Path, value: Any) -> None:
    path = _write(tmp_path, json.dumps(value))
    if _finite_everywhere(value):
        assert read_json(path, "--file") == value
    else:
        with pytest.raises(InputError):
            read_json(path, "--file")


@SETTINGS
@given(text=YAMLISH)
def test_read_yaml_returns_finite_bounded_values_or_refuses(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    try:
        value = read_yaml(path, "--file")
    except InputError:
        return
    assert _finite_everywhere(value) and nesting(value) <= MAX_DEPTH


@SETTINGS
@given(alpha=JSON_VALUES)
def test_a_tune_reports_alpha_is_a_real_number_in_0_1_or_refused(
    tmp_path: Path, alpha: Any
) -> None:
    path = _write(tmp_path, json.dumps({"fit": {"alpha": alpha}}))
    is_number = isinstance(alpha, int | float) and not isinstance(alpha, bool)
    if is_number and math.isfinite(alpha) and 0 <= alpha <= 1:
        assert tune_report_alpha(str(path)) == float(alpha)
    else:
        with pytest.raises(InputError):
            tune_report_alpha(str(path))


ROW = {
    "id": "my-row",
    "role": "baseline",
    "source": "https://example.com/run",
    "quote": "TPOT 25.9 ms",
    "date": "2026-12-01",
    "stack": "plugin",
    "stack_group": "plugin-sync",
    "target": "Llama-3.1-8B",
    "instance": "trn2.3xlarge",
    "tp": 4,
    "lnc": 2,
    "batch": 2,
    "input_len": 64,
    "output_len": 192,
    "weight_bytes": 2,
    "tpot_ms": 25.9,
}


@SETTINGS
@given(
    field=st.sampled_from(["tp", "batch", "tpot_ms", "weight_bytes", "id", "k"]),
    written=st.one_of(YAMLISH.filter(lambda t: "\n" not in t), st.sampled_from(["true", "-5"])),
)
def test_an_accepted_row_has_typed_finite_positive_figures(
    tmp_path: Path, field: str, written: str
) -> None:
    """A row with one field written as any YAML scalar: accepted only when that field is typed
    right (the canonical text then holds an int that is not a boolean, or a positive finite
    number, or printable text); otherwise one InputError."""
    lines = yaml.safe_dump({"measurements": [{**ROW, field: "PLACEHOLDER"}]}, sort_keys=False)
    path = _write(tmp_path, lines.replace("PLACEHOLDER", written.replace("'", "")))
    try:
        text = read_rows_file(str(path))
    except InputError:
        return
    value = yaml.safe_load(text)["measurements"][0][field]
    if value is None:
        assert field == "tpot_ms"  # the one optional field of these: null means not published
    elif field in {"tp", "batch", "k"}:
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0
    elif field in {"tpot_ms", "weight_bytes"}:
        assert not isinstance(value, bool) and math.isfinite(value) and value > 0
    else:
        assert isinstance(value, str) and value.isprintable()


@SETTINGS
@given(plan=JSON_VALUES, nodes=SCALARS)
def test_a_plan_file_is_read_or_refused_and_booleans_are_never_node_counts(
    tmp_path: Path, plan: Any, nodes: Any
) -> None:
    from infra.settings.plan_file import read_plan

    doc = {
        "kind": "trnspec-deployment-plan",
        "serving": {"profile": "qwen3-4b-baseline"},
        "plan": plan
        if not isinstance(plan, dict)
        else {**plan, "chosen": {"nodes_at_peak": nodes}},
    }
    path = _write(tmp_path, yaml.safe_dump(doc))
    found, problems = read_plan(str(path))
    if found is not None:
        assert not isinstance(found.nodes_at_peak, bool)
    else:
        assert problems
