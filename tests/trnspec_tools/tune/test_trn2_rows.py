"""tune's measurements as rows of the Trn2 data file: what `trnspec fit --add` reads back."""

from __future__ import annotations

import yaml
from made_runs import made_run
from trnspec.cli.main import main as trnspec_main
from trnspec.perf.published import data_text, load_published

from trnspec_tools.bench.run_result import AcceptanceFigures, ArmRun
from trnspec_tools.tune.trn2_rows import conditions_for, measured_rows, rows_yaml


def run(arm: str, tps: float, tpot: float, tau: float | None = None, source: str | None = None):
    acceptance = AcceptanceFigures(mean_accepted_length=tau, acceptance_source=source)
    result = made_run(output_tokens_per_s=tps, tpot_p50=tpot, acceptance=acceptance)
    return ArmRun(arm, "http://127.0.0.1:8000", "m", result)


COND = conditions_for("llama31-8b-eagle3", 512, 128, "trnspec tune --out r.json", "2026-12-01")
BASELINE = {1: run("baseline", 80.0, 12.3), 2: run("baseline", 150.0, 13.1)}
RUNS = {
    3: {
        1: run("k=3", 190.0, 5.2, 2.9, "server-metrics"),
        2: run("k=3", 300.0, 6.5, 3.0, "estimate-from-chunks"),
    }
}


def test_the_deployed_profile_gives_every_rows_conditions():
    # speculation on the plugin turns async scheduling off: its rows are the synchronous stack's
    assert (COND.stack_group, COND.method, COND.tp, COND.instance) == (
        "plugin-sync",
        "eagle3",
        4,
        "trn2.3xlarge",
    )


def test_a_baseline_row_per_concurrency_and_a_speculative_row_per_k_and_concurrency():
    rows, skipped = measured_rows(COND, BASELINE, RUNS)
    assert [r.id for r in rows] == [
        "llama31-8b-eagle3-c1",
        "llama31-8b-eagle3-c2",
        "llama31-8b-eagle3-c1-k3",
    ]
    spec = rows[-1]
    assert (spec.batch, spec.k, spec.acceptance_length, spec.baseline) == (
        1,
        3,
        2.9,
        "llama31-8b-eagle3-c1",
    )
    assert spec.fitted_step_ms == 5.2 * 2.9
    # a chunk-size estimate of acceptance is not a measurement to fit
    assert skipped == [
        "k=3 at concurrency 2: acceptance not from the server's counters (estimate-from-chunks)"
    ]


def test_the_rows_load_back_with_their_quote_and_refit_with_fit_add(tmp_path, capsys):
    rows, _ = measured_rows(COND, BASELINE, RUNS)
    text = rows_yaml(COND, rows)
    assert "output_tokens_per_s 190.0" in yaml.safe_load(text)["measurements"][2]["quote"]
    measurements, _ = load_published(data_text(), [text])
    assert {r.id for r in rows} <= {m.id for m in measurements}
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    assert trnspec_main(["fit", "--add", str(path)]) == 0
    assert "llama31-8b-eagle3-c1-k3" in capsys.readouterr().out


def test_a_run_without_a_per_token_time_is_no_row():
    """Behind a buffering proxy the stream arrives in bursts: p50 TPOT 0 times no decode step."""
    bursty = {1: run("baseline", 80.0, 0.0)}
    rows, skipped = measured_rows(COND, bursty, {})
    assert rows == [] and skipped[0].startswith("baseline at concurrency 1: no per-token time")
    untimed = {3: {1: run("k=3", 190.0, 0.0, 2.9, "server-metrics")}}
    rows, skipped = measured_rows(COND, BASELINE, untimed)
    assert [r.role for r in rows] == ["baseline", "baseline"]
    assert skipped[0].startswith("k=3 at concurrency 1: no per-token time")


def _counted(tau: float, k_used: float | None) -> dict[int, dict[int, ArmRun]]:
    acceptance = AcceptanceFigures(
        mean_accepted_length=tau, acceptance_source="server-metrics", k_used=k_used
    )
    result = made_run(output_tokens_per_s=190.0, tpot_p50=5.2, acceptance=acceptance)
    return {15: {1: ArmRun("k=15", "http://127.0.0.1:8000", "m", result)}}


def test_a_row_is_written_only_for_the_window_the_server_drafted():
    """A row for k=15 whose server drafted 4 tokens per draft would fit another window."""
    rows, skipped = measured_rows(COND, BASELINE, _counted(2.9, 4.0))
    assert [r.role for r in rows] == ["baseline", "baseline"]
    assert "drafted 4.00 tokens per draft, not k=15" in skipped[0]
    rows, _ = measured_rows(COND, BASELINE, _counted(2.9, 15.0))
    assert rows[-1].k == 15


def test_an_acceptance_length_above_k_plus_one_is_no_row():
    rows, skipped = measured_rows(
        COND, BASELINE, {3: {1: run("k=3", 190.0, 5.2, 4.5, "server-metrics")}}
    )
    assert [r.role for r in rows] == ["baseline", "baseline"]
    assert "exceeds k + 1 = 4" in skipped[0]
