"""The calibration's rows for the Trn2 data file: one real run per arm and level, the level's
(lower) median round by throughput, and none from a level without a verdict."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from made_runs import deltas, made_run

from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.calibration.rows import calibration_rows
from trnspec_tools.calibration.summary import CalibrationRun, summarize
from trnspec_tools.tune.trn2_rows import conditions_for

C = 4
ENDPOINTS = {"plain": ("http://plain", "m"), "speculative": ("http://spec", "m")}
COUNTED = AcceptanceFigures(
    acceptance_source="server-metrics",
    acceptance_rate=0.5,
    mean_accepted_length=3.0,
    spec_decode_deltas=deltas(10, 40, 20),
)


def _runs(plain: list[float], spec: list[float]) -> list[CalibrationRun]:
    out = []
    for r, (p, s) in enumerate(zip(plain, spec, strict=True)):
        base = made_run(output_tokens_per_s=p, tpot_p50=1000.0 / p, concurrency=C)
        target = made_run(
            output_tokens_per_s=s, tpot_p50=1000.0 / s, concurrency=C, acceptance=COUNTED
        )
        out.append(CalibrationRun("plain", C, r, 2 * r, base))
        out.append(CalibrationRun("speculative", C, r, 2 * r + 1, target))
    return out


def _rows(runs: list[CalibrationRun]):
    summary = summarize(runs, [C], {"plain": None, "speculative": None})
    plain = conditions_for("qwen3-4b-baseline", 100, 200, "test", "2026-12-07")
    spec = conditions_for("qwen3-4b-dflash", 100, 200, "test", "2026-12-07")
    return calibration_rows(summary, runs, plain, spec, 15, ENDPOINTS)


def test_each_row_is_the_arms_lower_median_round_not_an_average_or_the_upper_one():
    rows, skipped = _rows(_runs([100, 300, 200, 400], [150, 450, 300, 600]))
    base = next(r for r in rows if r.role == "baseline")
    spec = next(r for r in rows if r.role == "speculative")
    assert base.output_tokens_per_s == 200 and base.tpot_ms == pytest.approx(5.0)
    assert spec.output_tokens_per_s == 300 and spec.tpot_ms == pytest.approx(1000 / 300)
    assert spec.baseline == base.id and spec.batch == base.batch == C
    assert spec.acceptance_length == pytest.approx(3.0)
    assert skipped == []


def test_a_level_without_a_verdict_gives_no_rows_and_says_why():
    runs = _runs([100, 100], [150, 150])
    runs[3] = dataclasses.replace(runs[3], result=None, error="ReadTimeout")
    rows, skipped = _rows(runs)
    assert rows == []
    assert skipped and skipped[0].startswith("concurrency 4: no verdict, no rows")


def test_the_rows_text_is_what_the_data_file_reads_back_with_each_arms_shape_once():
    from trnspec.perf.published import data_text, load_published

    from trnspec_tools.calibration.rows import combined_rows_yaml

    runs = _runs([100, 300], [150, 450])
    rows, _ = _rows(runs)
    plain = conditions_for("qwen3-4b-baseline", 100, 200, "test", "2026-12-07")
    spec = conditions_for("qwen3-4b-dflash", 100, 200, "test", "2026-12-07")
    text = combined_rows_yaml(plain, spec, rows)
    doc = yaml.safe_load(text)
    names = [s["name"] for s in doc["shapes"]]
    assert len(names) == len(set(names)) and plain.target.name in names
    assert [m["id"] for m in doc["measurements"]] == [r.id for r in rows]
    measurements, _ = load_published(data_text(), [text])
    read = {m.id: m for m in measurements}
    for row in rows:
        assert read[row.id].output_tokens_per_s == row.output_tokens_per_s
        assert read[row.id].baseline == row.baseline


def test_a_plain_arm_of_another_target_brings_its_own_shape():
    from trnspec_tools.calibration.rows import combined_rows_yaml

    plain = conditions_for("qwen3-32b-baseline", 100, 200, "test", "2026-12-07")
    spec = conditions_for("qwen3-4b-dflash", 100, 200, "test", "2026-12-07")
    names = [s["name"] for s in yaml.safe_load(combined_rows_yaml(plain, spec, []))["shapes"]]
    assert plain.target.name in names and spec.target.name in names


def test_each_row_names_its_arm_and_endpoint_and_a_failed_level_leaves_the_next_one_be():
    runs = _runs([100, 100], [150, 150])
    runs[1] = dataclasses.replace(runs[1], result=None, error="ReadTimeout")  # level 4 fails
    later = [dataclasses.replace(r, concurrency=8) for r in _runs([100, 300], [150, 450])]
    later = [
        dataclasses.replace(r, result=dataclasses.replace(r.result, concurrency=8)) for r in later
    ]
    summary = summarize([*runs, *later], [C, 8], {"plain": None, "speculative": None})
    plain = conditions_for("qwen3-4b-baseline", 100, 200, "test", "2026-12-07")
    spec = conditions_for("qwen3-4b-dflash", 100, 200, "test", "2026-12-07")
    rows, skipped = calibration_rows(summary, [*runs, *later], plain, spec, 15, ENDPOINTS)
    assert {r.batch for r in rows} == {8} and len(rows) == 2
    base = next(r for r in rows if r.role == "baseline")
    target = next(r for r in rows if r.role == "speculative")
    assert base.source == "test (http://plain)" and target.source == "test (http://spec)"
    assert base.quote.startswith("tune measured baseline at concurrency 8")
    assert target.quote.startswith("tune measured target at concurrency 8")
    assert skipped[0].startswith("concurrency 4: no verdict")


def test_a_speculative_row_the_counters_cannot_back_is_left_out_and_said():
    estimated = AcceptanceFigures(acceptance_source="estimate-from-chunks", mean_accepted_length=3)
    runs = [
        dataclasses.replace(r, result=dataclasses.replace(r.result, acceptance=estimated))
        if r.arm == "speculative"
        else r
        for r in _runs([100, 300], [150, 450])
    ]
    rows, skipped = _rows(runs)
    assert [r.role for r in rows] == ["baseline"]
    assert skipped == [
        "k=15 at concurrency 4: acceptance not from the server's counters (estimate-from-chunks)"
    ]
