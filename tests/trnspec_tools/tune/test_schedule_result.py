"""tune --schedule's written JSON: the golden file for two fixed sets of rounds (the same keys,
values and order the result has always had), and what its recommendation records per level."""

from __future__ import annotations

import os

import pytest
from schedule_cases import CLOSE, RATIOS, SCHEDULE_ARGV, analysed, earlier_result

from trnspec_tools.tune.tune import main


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's load and core count, fixed, so the written files are reproducible."""
    loads = iter([(1.0, 2.0, 3.0), (0.5, 0.25, 0.125)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


@pytest.mark.parametrize("ratios", [RATIOS, CLOSE], ids=["apart", "close"])
def test_the_written_json_and_markdown_are_the_golden_ones(tmp_path, fixed_host, snapshot, ratios):
    out = tmp_path / "out" / "schedule.json"
    earlier = earlier_result(tmp_path, ratios)
    argv = [*SCHEDULE_ARGV, "--from-json", str(earlier), "--no-plots", "--out", str(out)]
    assert main(argv) == 0
    assert out.read_text() == snapshot(name="json")
    assert out.with_suffix(".md").read_text() == snapshot(name="markdown")
    assert out.with_suffix(".override").read_text() == snapshot(name="override")


def test_the_recommendation_records_the_chosen_and_the_best_ratio_per_level(tmp_path):
    rec = analysed(tmp_path).to_json()["recommendation"]
    at_1 = rec["per_level"]["1"]  # type: ignore[index]
    assert at_1["best"] == "k=4"
    assert at_1["best_ratio_to_plain"]["median"] == pytest.approx(1.60)
    assert at_1["chosen_ratio_to_plain"]["median"] == pytest.approx(1.58)
    assert at_1["chosen_over_best"] == pytest.approx(1.58 / 1.60)
    assert list(rec["per_level"]) == ["1", "8", "32"]  # type: ignore[index]
