"""Measured rows are the plan's evidence: they refit the model through the `trnspec fit --add` path,
and a speculative row measured slower than its plain row keeps speculation out at that target,
stack group and batch (trnspec.plan.measured)."""

from __future__ import annotations

import pytest
from rows_fixture import rows_text
from trnspec.boundary.errors import BoundaryError
from trnspec.perf.published import load_published
from trnspec.plan.measured import measured_evidence, slower_than_plain


def test_a_speculative_row_slower_than_its_plain_row_is_a_veto_at_its_target_group_and_batch():
    rows, _ = load_published("", [rows_text(0.64)])
    (slow,) = slower_than_plain(rows)
    assert (slow.target, slow.stack_group, slow.batch) == ("Qwen3-4B", "plugin-sync", 1)
    assert slow.speedup == pytest.approx(0.64, abs=1e-3)


def test_a_faster_speculative_row_vetoes_nothing():
    rows, _ = load_published("", [rows_text(1.3)])
    assert slower_than_plain(rows) == []


def test_the_veto_names_the_rows_and_applies_only_where_they_were_measured():
    ev = measured_evidence("--measured", "rows.yaml", rows_text(0.64))
    why = ev.veto("qwen3-4b", "plugin-sync", 1)
    assert why is not None and "my-qwen3-4b-dflash-c1 is 0.64x of my-qwen3-4b-plain-c1" in why
    assert ev.veto("Qwen3-4B", "plugin-sync", 2) is None
    assert ev.veto("Qwen3-4B", "nxdi-fork", 1) is None
    assert ev.veto("Llama-3.1-8B", "plugin-sync", 1) is None


def test_the_rows_refit_the_model_and_give_the_plain_floor_a_held_out_band():
    ev = measured_evidence("--measured", "rows.yaml", rows_text(0.64))
    ids = {m.id for m in ev.calibration.measurements}
    assert {"my-qwen3-4b-plain-c1", "my-qwen3-4b-dflash-c1"} <= ids
    held_out = [h for h in ev.calibration.validation if h.id == "my-qwen3-4b-plain-c1"]
    assert held_out and held_out[0].error is not None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("measurements: []\n", "no rows"),
        ("measurements: [\n", "not YAML"),
        ("measurements:\n  - id: x\n    role: baseline\n    quote: words\n", "missing fields"),
    ],
    ids=["empty", "not-yaml", "missing-fields"],
)
def test_a_file_that_is_not_rows_is_one_line_naming_the_flag(text, needle):
    with pytest.raises(BoundaryError) as err:
        measured_evidence("--measured", "rows.yaml", text)
    assert str(err.value).startswith("--measured=rows.yaml: not a rows file")
    assert needle in str(err.value) and "\n" not in str(err.value)
