"""tune.py: the fit and recommendation from runs, and the sweep end to end on fake servers."""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest
from fake_openai_server import running
from made_runs import deltas, made_run

from trnspec_tools.bench.run_result import AcceptanceFigures, ArmRun, RunResult
from trnspec_tools.tune.k_sweep import analyse
from trnspec_tools.tune.round_run import RoundPair, RoundRun
from trnspec_tools.tune.tune import check_override, main
from trnspec_tools.tune.tune_options import parse_endpoints
from trnspec_tools.tune.versus_plain import PLAIN_OVERRIDE, VersusPlain
from trnspec_tools.tune.window_fit import (
    expected_tokens_per_step,
    tokens_per_step_from_conditional,
)


def model_runs(alpha: float, c: float, ks: list[int], base_tps: float = 100.0):
    baseline = made_run(output_tokens_per_s=base_tps, tpot_p50=10.0)
    runs = {}
    for k in ks:
        tps = expected_tokens_per_step(alpha, k)
        runs[k] = made_run(
            output_tokens_per_s=base_tps * tps / (1 + k * c),
            tpot_p50=5.0,
            acceptance=AcceptanceFigures(
                mean_accepted_length=tps,
                acceptance_per_position=tuple(alpha ** (i + 1) for i in range(k)),
                spec_decode_deltas=deltas(1000, 0, 0),
            ),
        )
    return baseline, runs


def twice(baseline: RunResult, runs: dict[int, RunResult]) -> VersusPlain:
    """Each run alternated with the baseline in two identical rounds (one round decides
    nothing: trnspec_tools.ab.comparison)."""
    return VersusPlain.of_rounds(
        {
            k: {
                baseline.concurrency: [
                    RoundPair.measured(i == 0, RoundRun.of(baseline), RoundRun.of(r))
                    for i in range(2)
                ]
            }
            for k, r in runs.items()
        }
    )


def at_tps(run: RunResult, tps: float) -> RunResult:
    """The run with another measured output throughput."""
    return dataclasses.replace(
        run, requests=dataclasses.replace(run.requests, output_tokens_per_s=tps)
    )


def test_analysis_recommends_the_hand_computed_k_and_its_precompile_neighbours():
    # a = 0.6, c = 0.2: speedups 1.333, 1.400, 1.360 for k = 1, 2, 3 -> k = 2
    baseline, runs = model_runs(0.6, 0.2, [1, 2, 3])
    a = analyse(baseline, runs, k_max=7, versus=twice(baseline, runs))
    assert a.recommendation.k == 2
    assert a.recommendation.precompile == (1, 2, 3)
    assert a.recommendation.best_measured_k == 2
    assert a.model.alpha == pytest.approx(0.6, abs=1e-6)
    assert a.model.cost_ratio == pytest.approx(0.2, abs=1e-9)
    for row in a.rows:
        if row.measured_speedup is not None:
            assert row.predicted_speedup == pytest.approx(row.measured_speedup, rel=1e-9)
    assert [r.k for r in a.rows] == list(range(1, 8))


def test_analysis_may_recommend_an_unmeasured_k_and_says_so():
    baseline, runs = model_runs(0.9, 0.02, [1, 2])
    rec = analyse(baseline, runs, k_max=7, versus=twice(baseline, runs)).recommendation
    assert rec.k > 2 and rec.measured is False


def test_analysis_refuses_runs_without_acceptance():
    from trnspec_tools.bench.options import UsageError

    with pytest.raises(UsageError, match="acceptance"):
        analyse(made_run(output_tokens_per_s=1.0), {2: made_run()}, 7)


@pytest.mark.parametrize(
    ("line", "profile", "ok"),
    [
        ("speculation.num_speculative_tokens=3", "local-tiny", True),
        ("speculation.num_speculative_tokens=9", "qwen3-32b-draft", False),  # neuron-fork k <= 7
    ],
)
def test_the_override_line_is_checked_by_the_config_layer(line, profile, ok):
    pytest.importorskip("trnspec.checks.all_checks")
    assert (check_override(line, profile) is None) is ok


@pytest.mark.parametrize("item", ["x=http://h", "0=http://h", "3=ftp://h", "3"])
def test_bad_endpoint_for_k_is_named(item):
    from trnspec_tools.bench.options import UsageError

    with pytest.raises(UsageError, match="--endpoint-for-k"):
        parse_endpoints([item])


def test_sweep_against_per_k_servers_writes_table_plot_and_override(tmp_path, capsys):
    """Fake servers whose step time grows with k like a draft of cost c = 0.25 of the target
    (ITL 10 ms * (1 + k c)) and whose acceptance is about 0.75 per position.

    The speedups are timed, so on a busy host they are whatever the host made them: what is
    asserted holds at any speed, the acceptance (the servers' counters, not the clock) and the
    exact relations between the tool's own figures (each measured speedup is its rounds'
    median, the cost ratio is the model inverted on them, every prediction is the model's, the
    override is the recommendation)."""
    patterns = {1: "2,2,1,2", 2: "3,1,2,3,3,1,3,2", 4: "5,1,2,5,3,1,4,5,2,1,5,3,4,1,5,2"}
    out = tmp_path / "tune.json"
    base_args = ("--ttft-ms", "10", "--tokens-per-step", "1", "--k", "1", "--no-spec-metrics")
    with (
        running("--itl-ms", "10", *base_args) as base,
        running(
            "--ttft-ms", "10", "--itl-ms", "12.5", "--k", "1", "--tokens-per-step", patterns[1]
        ) as k1,
        running(
            "--ttft-ms", "10", "--itl-ms", "15", "--k", "2", "--tokens-per-step", patterns[2]
        ) as k2,
        running(
            "--ttft-ms", "10", "--itl-ms", "20", "--k", "4", "--tokens-per-step", patterns[4]
        ) as k4,
    ):
        code = main(
            [
                "--baseline",
                base,
                "--endpoint-for-k",
                f"1={k1}",
                "--endpoint-for-k",
                f"2={k2}",
                "--endpoint-for-k",
                f"4={k4}",
                "--num-prompts",
                "4",
                "--concurrency",
                "2",
                "--output-len",
                "41",
                "--input-len",
                "8",
                "--k-max",
                "7",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["acceptance_source"] == "server-metrics"
    fit = result["fit"]
    assert fit["alpha"] == pytest.approx(0.75, abs=0.1)  # from the counters: no clock in it
    rows = {r["k"]: r for r in result["rows"]}
    assert sorted(rows) == list(range(1, 8))
    measured = {k: r for k, r in rows.items() if r["measured_speedup"] is not None}
    assert set(measured) == {1, 2, 4}
    for r in measured.values():
        assert r["measured_speedup"] == statistics.median(r["ratio_to_plain"]["values"])
    # c inverted per window (1 + k c = L_k / S_k), then the least-squares slope through 0
    y = {k: r["mean_accepted_length"] / r["measured_speedup"] - 1.0 for k, r in measured.items()}
    assert {int(k): c for k, c in fit["c_per_k"].items()} == pytest.approx(
        {k: y[k] / k for k in y}, rel=1e-12
    )
    slope = sum(k * y[k] for k in y) / sum(k * k for k in y)
    assert fit["cost_ratio"] == pytest.approx(max(0.0, slope), rel=1e-12, abs=1e-15)
    assert fit["conditional"]  # per position, from the counters: the model's tokens per step
    for k, r in rows.items():
        tokens = tokens_per_step_from_conditional(fit["conditional"], k)
        assert r["predicted_tokens_per_step"] == pytest.approx(tokens, rel=1e-12)
        assert r["predicted_speedup"] == pytest.approx(
            tokens / (1 + k * fit["cost_ratio"]), rel=1e-12
        )
    rec = result["recommendation"]
    assert rec["model_best_k"] == max(rows, key=lambda k: (rows[k]["predicted_speedup"], -k))
    assert rec["k"] in (0, *rows)
    line = f"speculation.num_speculative_tokens={rec['k']}" if rec["k"] else PLAIN_OVERRIDE
    assert out.with_suffix(".override").read_text() == line + "\n"
    assert "precompile" in out.with_suffix(".md").read_text()
    assert (tmp_path / "tune_ksweep.png").read_bytes()[:4] == b"\x89PNG"
    assert f"--set {line}" in capsys.readouterr().out


def test_each_window_is_read_with_its_own_k_when_its_server_has_no_counters(tmp_path):
    """Without spec-decode counters the acceptance rate comes from the stream's chunks, which
    needs the window's k: (tokens per step - 1) / k. A window measured as if plain (k unknown)
    would have no rate, and the fit none to work from."""
    out = tmp_path / "tune.json"
    no_counters = ("--ttft-ms", "10", "--no-spec-metrics")
    with (
        running("--itl-ms", "10", "--tokens-per-step", "1", "--k", "1", *no_counters) as base,
        running("--itl-ms", "12.5", "--k", "1", "--tokens-per-step", "2", *no_counters) as k1,
        running("--itl-ms", "15", "--k", "2", "--tokens-per-step", "2", *no_counters) as k2,
    ):
        code = main(
            ["--baseline", base, "--endpoint-for-k", f"1={k1}", "--endpoint-for-k", f"2={k2}",
             "--num-prompts", "4", "--concurrency", "2", "--output-len", "41",
             "--input-len", "8", "--rounds", "1", "--out", str(out)]
        )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    assert result["acceptance_source"] == "estimate-from-chunks"
    by_k = {r["k"]: r for r in result["rows"] if r["measured_speedup"]}
    assert set(by_k) == {1, 2}
    # two tokens a step: every draft accepted at k=1, half of them at k=2
    assert by_k[1]["acceptance_rate"] == pytest.approx(1.0, abs=0.05)
    assert by_k[2]["acceptance_rate"] == pytest.approx(0.5, abs=0.05)


def test_remote_mode_needs_a_baseline(tmp_path, capsys):
    code = main(["--endpoint-for-k", "2=http://127.0.0.1:9", "--out", str(tmp_path / "t.json")])
    assert code == 2 and "--baseline" in capsys.readouterr().err


def test_a_measured_k_that_beats_the_model_is_preferred_over_the_prediction():
    baseline, runs = model_runs(0.6, 0.2, [1, 2, 3])
    runs[3] = at_tps(runs[3], 150.0)  # 1.5x measured, the model says 1.36x
    rec = analyse(baseline, runs, k_max=7, versus=twice(baseline, runs)).recommendation
    assert rec.k == 3 and rec.measured and rec.expected_speedup == pytest.approx(1.5)
    assert rec.best_measured_k == 3


# --- concurrency sweep, step-time model, per-category acceptance -------------------------------


def _level_stats(tps: float, mal: float | None = None, per_pos=None, drafts: int = 0):
    return made_run(
        output_tokens_per_s=tps,
        tpot_p50=1.0,
        acceptance=AcceptanceFigures(
            mean_accepted_length=mal,
            acceptance_per_position=per_pos,
            spec_decode_deltas=deltas(drafts, 0, 0),
        ),
    )


def _written_level(arm: str, tps: float, mal: float | None = None) -> dict:
    """A measured level as tune.py writes it under by_concurrency."""
    return ArmRun(arm, "http://127.0.0.1:8000", "m", _level_stats(tps, mal)).to_json()


def test_concurrency_analysis_marks_fit_rows_and_predicts_the_rest():
    from engine_cases import ALPHA, SETUP, synthetic_sweep

    from trnspec_tools.tune.engine_analysis import concurrency_analysis, sweep_points
    from trnspec_tools.tune.engine_fit import fit_engine

    baseline, runs = {}, {}  # the sweep as tune's measured levels
    for p in synthetic_sweep(ks=(1, 2, 4)):
        if p.k == 0:
            baseline[p.concurrency] = _level_stats(p.output_tokens_per_s)
        else:
            runs.setdefault(p.k, {})[p.concurrency] = _level_stats(
                p.output_tokens_per_s, p.mean_accepted_length
            )
    points = sweep_points(baseline, runs)
    fit = fit_engine(points, SETUP, 2)
    out = concurrency_analysis(points, SETUP, fit, [ALPHA], ALPHA, [1, 4, 64, 4096], 6)
    assert out.fit_concurrency == 2
    assert {(r.concurrency, r.used_for_fit) for r in out.rows} == {
        (1, False),
        (2, True),
        (4, False),
        (8, False),
    }
    assert out.held_out.rows == 9
    for r in out.rows:  # accuracy off the fit concurrency: test_engine_fit.py
        if r.used_for_fit:
            assert r.predicted_speedup == pytest.approx(r.measured_speedup, rel=0.02)
    rec = out.recommendation_by_batch
    assert set(rec.best_k_per_batch) == {1, 4, 64, 4096}
    assert rec.precompile
    # how sure: the largest held-out error inside the measured 1..8, no band beyond
    assert [v.batch for v in out.verdicts] == [1, 4, 64, 4096]
    for v in out.verdicts:
        if v.batch <= 8:
            assert v.speedup_low == pytest.approx(v.speedup * (1 - out.held_out.max_abs_error))
        else:
            assert (v.verdict, v.speedup_low) == ("undecided", None)


@pytest.mark.parametrize("profile", ["qwen3-4b-dflash", "llama31-8b-eagle3", "qwen3-32b-draft"])
def test_trn2_advice_is_predicts_answer_at_the_same_acceptance(profile):
    """tune --trn2-profile and predict are one model: the same best k and speedup per batch,
    k=0 priced as the plain server a user would deploy instead (for a DFlash or EAGLE3 profile
    an asynchronous one, while the speculative command schedules synchronously)."""
    from trnspec.config.serving import load_profile
    from trnspec.plan.predict import PredictQuery, build

    from trnspec_tools.tune.engine_analysis import trn2_recommendation

    batches, alpha = [1, 2, 4, 8], 0.7
    trn2 = trn2_recommendation(profile, [], alpha, batches, 512 + 256 // 2)
    advice = trn2.advice
    query = PredictQuery(
        acceptance_rate=alpha,
        batch=",".join(map(str, batches)),
        k=",".join(map(str, range(trn2.k_max + 1))),
        input_len=512,
        output_len=256,
    )
    report = build(query, load_profile(profile))
    predicted = {r.batch: (r.k, r.speedup) for r in report.rows
                 if report.best_k_per_batch[r.batch] == r.k}  # fmt: skip
    assert {b: k for b, (k, _) in advice.best_k_per_batch.items()} == {
        b: k for b, (k, _) in predicted.items()
    }
    for b, (_, speedup) in advice.best_k_per_batch.items():
        assert speedup == pytest.approx(predicted[b][1], abs=1e-3)
    assert list(trn2.verdicts) == report.batch_verdicts  # and as sure as predict says it is


def test_trn2_advice_uses_the_measured_acceptance_and_the_image_limit():
    from trnspec_tools.tune.engine_analysis import trn2_recommendation

    high = trn2_recommendation("qwen3-32b-draft", [0.95], 0.95, [1, 4, 64], 640)
    low = trn2_recommendation("qwen3-32b-draft", [0.5], 0.5, [1, 4, 64], 640)
    assert high.k_max == 7 and all(k <= 7 for k in high.advice.precompile)
    assert high.advice.best_k_per_batch[1][0] > low.advice.best_k_per_batch[1][0]
    assert high.advice.best_k_per_batch[64][0] == 0


def test_categories_are_grouped_from_the_jsonl(tmp_path):
    from trnspec_tools.tune.tune import category_specs

    path = tmp_path / "d.jsonl"
    lines = [{"prompt": f"w{i}", "category": "writing"} for i in range(5)]
    lines += [{"prompt": f"c{i}", "category": "coding", "max_tokens": 9} for i in range(2)]
    lines += [{"prompt": "x"}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    groups = category_specs(str(path), 6, 16, 0)
    assert set(groups) == {"writing", "coding", "uncategorized"}
    assert all(len(v) == 2 for v in groups.values())
    assert {s.prompt[0] for s in groups["coding"]} == {"c"} and groups["coding"][0].max_tokens == 9


@pytest.mark.parametrize("dataset", [None, "tiny-corpus"])
def test_per_category_needs_a_jsonl_dataset(dataset):
    from trnspec_tools.bench.options import UsageError
    from trnspec_tools.tune.tune import category_specs

    with pytest.raises(UsageError, match="--per-category"):
        category_specs(dataset, 4, 16, 0)


def test_category_acceptance_is_fitted_from_acceptance_alone_per_category():
    from trnspec_tools.tune.engine_analysis import BatchAdvice, category_acceptance

    cats = {
        "coding": {k: _level_stats(1.0, expected_tokens_per_step(0.9, k)) for k in (1, 2, 4)},
        "writing": {k: _level_stats(9.0, expected_tokens_per_step(0.4, k)) for k in (1, 2, 4)},
        "none": {2: _level_stats(1.0)},
    }
    seen = []

    def advice(cond, a):
        seen.append(a)
        return BatchAdvice({1: (2, 1.1)}, None, (1, 2, 3))

    out = category_acceptance(cats, advice)
    assert out["coding"].alpha == pytest.approx(0.9, abs=1e-4)
    assert out["writing"].alpha == pytest.approx(0.4, abs=1e-4)  # throughput plays no part
    assert seen == [out["coding"].alpha, out["writing"].alpha]
    assert out["none"] is None
    written = out["writing"].to_json()
    assert set(written) == {"acceptance", "alpha", "conditional", "runs", "recommendation_by_batch"}


def test_two_concurrency_levels_against_fake_servers_write_the_validation_rows(tmp_path):
    out = tmp_path / "tune.json"
    with (
        running("--ttft-ms", "5", "--itl-ms", "10", "--tokens-per-step", "1", "--k", "1") as base,
        running("--ttft-ms", "5", "--itl-ms", "14", "--k", "2", "--tokens-per-step", "3,2,1") as k2,
        running("--ttft-ms", "5", "--itl-ms", "20", "--k", "4", "--tokens-per-step", "5,3,2") as k4,
    ):
        code = main(
            [
                "--baseline",
                base,
                "--endpoint-for-k",
                f"2={k2}",
                "--endpoint-for-k",
                f"4={k4}",
                "--profile",
                "qwen3-32b-draft",
                "--trn2-profile",
                "qwen3-32b-draft",
                "--concurrency",
                "1,2",
                "--fit-concurrency",
                "1",
                "--rounds",
                "2",
                "--num-prompts",
                "4",
                "--output-len",
                "12",
                "--input-len",
                "8",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    result = json.loads(out.read_text())
    cv = result["concurrency_validation"]
    assert isinstance(cv, dict), cv
    rows = cv["rows"]
    assert {(r["concurrency"], r["k"]) for r in rows} == {(1, 2), (1, 4), (2, 2), (2, 4)}
    assert all(r["used_for_fit"] == (r["concurrency"] == 1) for r in rows)
    assert set(result["by_concurrency"]) == {"1", "2"}
    assert result["trn2"]["profile"] == "qwen3-32b-draft"
    # the fork has published rows at batch 1 only: above it every draft-model figure is further
    # out than any held-out fold, so its band is unknown and the model cannot tell, and says so
    verdicts = result["trn2"]["batch_verdicts"]
    assert [v["batch"] for v in verdicts] == sorted(
        int(b) for b in result["trn2"]["best_k_per_batch"]
    )
    assert {v["verdict"] for v in verdicts if v["batch"] > 1} == {"undecided"}
    assert all(v["speedup_low"] is None for v in verdicts if v["batch"] > 1)
    assert (tmp_path / "tune_concurrency.png").read_bytes()[:4] == b"\x89PNG"
    markdown = out.with_suffix(".md").read_text()
    assert "Speedup across concurrency" in markdown
    assert "How sure (the best k's speedup with both error bands against it" in markdown
    # the engine was measured at 1 and 2: its advice at 4 and above is an extrapolation
    engine = result["concurrency_validation"]["batch_verdicts"]
    assert [v["verdict"] for v in engine if v["batch"] > 2] == ["undecided"] * 4
    assert "Undecided at batch" in markdown and "measure these concurrencies" in markdown
    assert "Undecided at batch 2, 4, 8, 16, 32: measure on Trn2 before choosing" in markdown


def test_an_earlier_result_can_be_reanalysed_without_measuring(tmp_path):
    from trnspec_tools.tune.alternated import load_measurements

    result = {
        "by_concurrency": {
            "1": {
                "baseline": _written_level("baseline", 100.0),
                "runs": {"2": _written_level("k=2", 150.0, 2.5)},
            },
            "2": {
                "baseline": _written_level("baseline", 180.0),
                "runs": {"2": _written_level("k=2", 250.0, 2.5)},
            },
        },
        "categories": {"code": {"alpha": 0.9, "runs": {"2": _level_stats(1.0, 2.7).to_json()}}},
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(result))
    found = load_measurements(path, [1, 2])
    assert found.baseline[2].result.output_tokens_per_s == 180.0
    assert found.runs[2][1].result.output_tokens_per_s == 150.0
    assert found.cats["code"][2].acceptance.mean_accepted_length == 2.7
    assert found.rounds == {}  # written before alternation: one ratio per run
    assert found.versus_plain().at(2, 2).median == pytest.approx(250.0 / 180.0)
    from trnspec_tools.bench.options import UsageError

    with pytest.raises(UsageError, match="concurrency \\[4\\]"):
        load_measurements(path, [1, 4])


def test_per_category_sweep_against_fake_servers_reports_acceptance_per_category(tmp_path):
    data = tmp_path / "prompts.jsonl"
    rows = [{"prompt": f"write {i}", "category": "writing"} for i in range(3)]
    rows += [{"prompt": f"code {i}", "category": "coding"} for i in range(3)]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "tune.json"
    with (
        running("--ttft-ms", "5", "--itl-ms", "10", "--tokens-per-step", "1", "--k", "1") as base,
        running("--ttft-ms", "5", "--itl-ms", "14", "--k", "2", "--tokens-per-step", "3,2,1") as k2,
    ):
        code = main(
            [
                "--baseline",
                base,
                "--endpoint-for-k",
                f"2={k2}",
                "--dataset",
                str(data),
                "--per-category",
                "--num-prompts",
                "4",
                "--output-len",
                "12",
                "--out",
                str(out),
                "--no-plots",
            ]
        )
    assert code == 0
    cats = json.loads(out.read_text())["categories"]
    assert set(cats) == {"writing", "coding"}
    for entry in cats.values():
        # the fake server accepts 3, 2, 1 tokens per step in turn: mean 2
        assert entry["acceptance"]["2"]["mean_accepted_length"] == pytest.approx(2.0, abs=0.35)
        assert 0.0 < entry["alpha"] < 1.0


def test_a_speedup_above_its_tokens_per_step_is_left_out_of_the_fit_and_the_table():
    baseline, runs = model_runs(0.6, 0.2, [1, 2, 3])
    runs[1] = at_tps(runs[1], 400.0)  # 4x from a window of 1 (at most 2 tokens per step)
    a = analyse(baseline, runs, k_max=7, versus=twice(baseline, runs))
    row1 = next(r for r in a.rows if r.k == 1)
    assert row1.measured_speedup is None and row1.implausible is True
    assert a.recommendation.k == 2  # from the plausible runs, as without k=1
    assert a.model.alpha == pytest.approx(0.6, abs=1e-3)
    assert not any(r.implausible for r in a.rows if r.k != 1)


def test_a_tune_json_holding_nan_is_refused_in_one_line_not_turned_into_a_speedup(tmp_path, capsys):
    from trnspec_tools.tune.tune import main as tune_main

    earlier = tmp_path / "earlier.json"
    earlier.write_text(
        '{"by_concurrency": {"1": {"baseline": {"output_tokens_per_s": NaN}, "runs": {}}}}'
    )
    code = tune_main(["--from-json", str(earlier), "--out", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert code == 2 and "NaN is not a finite number" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "t.json").exists()


def test_a_tune_json_with_a_run_out_of_range_is_refused_naming_the_field(tmp_path, capsys):
    from trnspec_tools.tune.tune import main as tune_main

    baseline = {**_written_level("baseline", 100.0), "output_tokens_per_s": -5.0}
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"by_concurrency": {"1": {"baseline": baseline, "runs": {}}}}))
    code = tune_main(
        ["--from-json", str(earlier), "--concurrency", "1", "--out", str(tmp_path / "t.json")]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert "by_concurrency.1.baseline.output_tokens_per_s=-5.0: must be a finite number >= 0" in err
    assert not (tmp_path / "t.json").exists()


def test_the_local_launcher_arms_are_one_per_k_with_the_overrides_and_a_plain_baseline():
    from trnspec_tools.tune.alternated import arms_of
    from trnspec_tools.tune.tune import build_parser
    from trnspec_tools.tune.tune_options import tune_options

    argv = ["--k", "1,3", "--set", "max_num_seqs=8", "--out", "t.json"]
    base, arms = arms_of(tune_options(build_parser().parse_args(argv)))
    assert (base.name, base.endpoint, base.local_overrides) == (
        "baseline",
        None,
        ["max_num_seqs=8", "speculation.method=none"],
    )
    assert {k: (a.name, a.local_overrides, a.k) for k, a in arms.items()} == {
        1: ("k=1", ["max_num_seqs=8", "speculation.num_speculative_tokens=1"], 1),
        3: ("k=3", ["max_num_seqs=8", "speculation.num_speculative_tokens=3"], 3),
    }


# --- what tune reads and writes: refused in one line, before anything is measured or lost ----


def _earlier(tmp_path, runs: dict) -> object:
    path = tmp_path / "earlier.json"
    level = {"baseline": _written_level("baseline", 100.0), "runs": runs}
    path.write_text(json.dumps({"by_concurrency": {"1": level}}))
    return path


def _one_line_refusal(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


def test_rows_out_may_not_overwrite_the_from_json_input_of_the_same_run(tmp_path, capsys):
    earlier = _earlier(tmp_path, {"2": _written_level("k=2", 150.0, 2.5)})
    before = earlier.read_bytes()
    argv = ["--from-json", str(earlier), "--concurrency", "1", "--out", str(tmp_path / "t.json")]
    argv += ["--trn2-profile", "qwen3-32b-draft", "--rows-out", str(earlier)]
    assert "--from-json input of this run" in _one_line_refusal(capsys, argv)
    assert earlier.read_bytes() == before


def test_rows_out_without_a_trn2_profile_is_refused_before_measuring(tmp_path, capsys):
    argv = ["--endpoint-for-k", "2=http://127.0.0.1:9", "--baseline", "http://127.0.0.1:9"]
    argv += ["--out", str(tmp_path / "t.json"), "--rows-out", str(tmp_path / "rows.yaml")]
    err = _one_line_refusal(capsys, argv)
    assert "--rows-out" in err and "--trn2-profile" in err
    assert not (tmp_path / "rows.yaml").exists()


@pytest.mark.parametrize(
    "keys",
    [["2", "02"], ["02"], ["+2"], ["²"], ["0"], ["9" * 400]],
    ids=["2-and-02", "leading-zero", "plus", "superscript", "zero", "400-digits"],
)
def test_runs_keyed_by_a_non_canonical_or_huge_window_are_refused_in_one_line(
    tmp_path, capsys, keys
):
    earlier = _earlier(tmp_path, {key: _written_level("k=2", 150.0, 2.5) for key in keys})
    argv = ["--from-json", str(earlier), "--concurrency", "1", "--out", str(tmp_path / "t.json")]
    err = _one_line_refusal(capsys, argv)
    assert "window k" in err and len(err) < 400


def test_one_round_per_window_decides_nothing_and_says_so():
    """Without alternated rounds each run against the baseline is one round: it fits the model
    but recommends no window (one round bounds nothing)."""
    baseline, runs = model_runs(0.6, 0.2, [1, 2, 3])
    a = analyse(baseline, runs, k_max=7)
    assert a.recommendation.k == 0
    assert a.model.alpha == pytest.approx(0.6, abs=1e-6)
