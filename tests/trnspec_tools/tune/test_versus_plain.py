"""No window measured slower than plain is recommended: the rule tune shares with --schedule."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import running
from made_runs import kept_run
from test_tune import model_runs

from trnspec_tools.tune.k_sweep import analyse
from trnspec_tools.tune.round_run import RoundPair
from trnspec_tools.tune.tune import main
from trnspec_tools.tune.versus_plain import PLAIN_OVERRIDE, VersusPlain


def _pairs(*ratios: float) -> list[RoundPair]:
    return [
        RoundPair.measured(i % 2 == 0, kept_run(100.0), kept_run(100.0 * r))
        for i, r in enumerate(ratios)
    ]


def test_a_window_whose_rounds_straddle_plain_does_not_beat_it():
    v = VersusPlain.of_rounds({2: {1: _pairs(1.3, 0.95)}, 3: {1: _pairs(1.2, 1.1)}})
    assert not v.beats_plain(2, 1) and v.beats_plain(3, 1)
    assert v.slower_at(2) == [] and v.eligible(3, 1)


def test_a_window_slower_than_plain_at_any_level_is_not_eligible():
    v = VersusPlain.of_rounds({2: {1: _pairs(1.4, 1.5), 8: _pairs(0.7, 0.8)}})
    assert v.beats_plain(2, 1) and v.slower_at(2) == [8] and not v.eligible(2, 1)


def test_rounds_with_errors_give_no_ratio():
    bad = RoundPair.measured(True, kept_run(0.0), kept_run(50.0))
    assert VersusPlain.of_rounds({2: {1: [bad]}}).at(2, 1) is None


def test_when_every_window_measured_slower_than_plain_no_speculation_is_recommended():
    baseline, runs = model_runs(0.3, 0.5, [1, 2, 4])  # every k below 1x
    rec = analyse(baseline, runs, k_max=7).recommendation
    assert rec.k == 0 and not rec.speculation and rec.measured
    assert rec.expected_speedup == 1.0 and rec.precompile == ()
    assert "no window measured faster than plain" in rec.reason


def test_a_window_faster_at_the_fit_level_but_slower_elsewhere_is_not_recommended():
    baseline, runs = model_runs(0.6, 0.2, [1, 2])
    versus = VersusPlain.of_rounds(
        {
            1: {2: _pairs(1.3, 1.35), 8: _pairs(0.8, 0.85)},
            2: {2: _pairs(1.4, 1.45), 8: _pairs(0.7, 0.75)},
        }
    )
    rec = analyse(baseline, runs, k_max=7, versus=versus, level=2).recommendation
    assert rec.k == 0 and "slower than plain at concurrency 8" in rec.reason


def test_an_unmeasured_k_is_recommended_only_when_a_measured_one_beats_plain():
    baseline, runs = model_runs(0.9, 0.02, [1, 2])  # the model prefers an unmeasured k > 2
    fast = VersusPlain.of_rounds({1: {1: _pairs(1.6, 1.7)}, 2: {1: _pairs(2.0, 2.1)}})
    assert analyse(baseline, runs, 7, fast, 1).recommendation.k > 2
    slow = VersusPlain.of_rounds({1: {1: _pairs(0.9, 0.95)}, 2: {1: _pairs(0.9, 0.97)}})
    assert analyse(baseline, runs, 7, slow, 1).recommendation.k == 0


def test_tune_on_a_fake_engine_where_no_window_beats_plain_recommends_no_speculation(
    tmp_path, capsys
):
    """Plain streams a token per 5 ms; the windows take 20 ms a step for about 1.3 tokens (low
    acceptance): every window is well below plain in every alternated round."""
    out = tmp_path / "tune.json"
    spec = ("--ttft-ms", "5", "--itl-ms", "20")
    with (
        running("--ttft-ms", "5", "--itl-ms", "5", "--tokens-per-step", "1", "--k", "1") as base,
        running(*spec, "--k", "1", "--tokens-per-step", "1,2,1") as k1,
        running(*spec, "--k", "2", "--tokens-per-step", "1,2,1,1") as k2,
    ):
        code = main(
            [
                "--baseline",
                base,
                "--endpoint-for-k",
                f"1={k1}",
                "--endpoint-for-k",
                f"2={k2}",
                "--num-prompts",
                "2",
                "--concurrency",
                "1",
                "--rounds",
                "2",
                "--output-len",
                "12",
                "--no-plots",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["recommendation"]["speculation"] is False
    assert result["recommendation"]["k"] == 0
    assert out.with_suffix(".override").read_text() == PLAIN_OVERRIDE + "\n"
    # alternated: two rounds per window, plain first then the window first (ABBA)
    assert [p["order"] for p in result["rounds"]["1"]["1"]] == ["plain-first", "candidate-first"]
    assert all(p["ratio"] < 1.0 for k in ("1", "2") for p in result["rounds"][k]["1"])
    assert "**Recommended: no speculation**" in out.with_suffix(".md").read_text()
    assert f"--set {PLAIN_OVERRIDE}" in capsys.readouterr().out


@pytest.mark.parametrize("ratios", [(1.3, 1.4), (0.8, 0.9), (1.2, 0.9)])
def test_the_recommendation_is_a_window_only_if_its_whole_spread_is_above_plain(ratios):
    baseline, runs = model_runs(0.6, 0.2, [2])
    versus = VersusPlain.of_rounds({2: {1: _pairs(*ratios)}})
    rec = analyse(baseline, runs, 7, versus, 1).recommendation
    assert rec.speculation is (min(ratios) > 1.0)
