"""trnspec_tools.demo's pure parts: the greedy-match rule, the report's fields and the exit rule.
(`make demo` itself runs the real servers; test_local_e2e.py covers that path.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from made_runs import deltas, kept_run
from trnspec.plan.verdict import Verdict

from trnspec_tools.bench.run_result import AcceptanceFigures
from trnspec_tools.client.metrics import Acceptance
from trnspec_tools.client.openai_client import Generation
from trnspec_tools.demo import Run, greedy_match, main, shortfalls, summary, write_report
from trnspec_tools.smoke import Check, SmokeResult
from trnspec_tools.tune.round_run import RoundPair

REQUIRED = (
    "acceptance_rate",
    "mean_accepted_length",
    "tokens_per_s_baseline",
    "tokens_per_s_spec",
    "speedup",
    "greedy_match",
    "k",
)


def gen(ids: list[int] | None, tokens: int = 4) -> Generation:
    return Generation("x", "length", 3, tokens, 3 + tokens, ids)


def run(outputs: list[Generation], wall_s: float) -> Run:
    tokens = sum(g.completion_tokens or 0 for g in outputs)
    return Run(outputs, kept_run(tokens / wall_s, tokens))


def test_throughput_is_the_bench_runners_figure() -> None:
    bench = kept_run(50.0, 150)
    assert Run([gen([1], tokens=100), gen([2], tokens=50)], bench).tokens_per_s == 50.0


def test_acceptance_is_taken_only_from_the_runners_server_counters() -> None:
    from trnspec_tools.demo import run_acceptance

    counted = AcceptanceFigures(
        acceptance_source="server-metrics",
        acceptance_rate=0.8,
        mean_accepted_length=4.2,
        acceptance_per_position=(0.9, 0.8, 0.8, 0.7),
        spec_decode_deltas=deltas(10, 40, 32),
    )
    assert run_acceptance(Run([], kept_run(1.0, acceptance=counted))).acceptance_rate == 0.8
    estimated = AcceptanceFigures(acceptance_source="estimate-from-chunks", acceptance_rate=0.7)
    assert run_acceptance(Run([], kept_run(1.0, acceptance=estimated))).acceptance_rate is None


@pytest.mark.parametrize(
    ("baseline_ids", "spec_ids", "expected"),
    [
        ([[1, 2], [3]], [[1, 2], [3]], (True, [])),
        ([[1, 2], [3]], [[1, 9], [3]], (False, [0])),
        ([[1, 2], None], [[1, 2], None], (False, [1])),  # no token ids: cannot claim a match
    ],
    ids=["identical", "one-differs", "ids-missing"],
)
def test_greedy_match_is_true_only_if_every_output_matches_token_for_token(
    baseline_ids: list[list[int] | None],
    spec_ids: list[list[int] | None],
    expected: tuple[bool, list[int]],
) -> None:
    baseline = run([gen(i) for i in baseline_ids], 1.0)
    spec = run([gen(i) for i in spec_ids], 1.0)
    assert greedy_match(baseline, spec) == expected


def make_report(speedup_wall: float, rate: float, match: bool, smoke_ok: bool) -> dict:
    baseline = run([gen([1], tokens=100)], 1.0)
    spec = run([gen([1], tokens=100)], 1.0 / speedup_wall)
    accept = Acceptance(10, 40, 40 * rate, rate, 1 + 4 * rate, [rate] * 4)
    smoke = SmokeResult("http://x", "m", [Check("chat", smoke_ok, "")])
    report = summary(baseline, spec, accept, 4, match, smoke)
    return report | {"mismatched_requests": [] if match else [0]}


def test_the_report_has_the_required_fields_and_the_speedup_ratio() -> None:
    report = make_report(1.5, 0.8, True, True)
    assert set(REQUIRED) <= set(report)
    assert report["speedup"] == pytest.approx(1.5)
    assert report["k"] == 4


@pytest.mark.parametrize(
    ("speedup", "rate", "match", "smoke_ok", "strict", "expected"),
    [
        (1.5, 0.8, True, True, True, []),
        (1.1, 0.8, True, True, False, []),
        (1.1, 0.8, True, True, True, ["speedup"]),
        (1.5, 0.3, True, True, True, ["acceptance"]),
        (1.5, 0.8, False, True, False, ["greedy outputs differ"]),
        (1.5, 0.8, True, False, False, ["smoke checks failed: chat"]),
    ],
)
def test_the_demo_fails_on_functional_problems_and_on_targets_only_when_strict(
    speedup: float,
    rate: float,
    match: bool,
    smoke_ok: bool,
    strict: bool,
    expected: list[str],
) -> None:
    problems = shortfalls(make_report(speedup, rate, match, smoke_ok), strict)
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem


def test_the_report_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "reports" / "demo.json"
    write_report(path, {"speedup": 1.4})
    assert json.loads(path.read_text()) == {"speedup": 1.4}
    assert [p.name for p in path.parent.iterdir()] == ["demo.json"]


def test_bad_arguments_are_refused_with_the_flag_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().out


def test_a_report_that_cannot_be_written_is_kept_in_a_named_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    (tmp_path / "file").write_text("x")
    [line] = write_report(tmp_path / "file" / "demo.json", {"speedup": 1.4})
    kept = next((tmp_path / "spare").glob("trnspec-demo-*/0-demo.json"))
    assert str(kept) in line and json.loads(kept.read_text()) == {"speedup": 1.4}


def test_the_plot_that_cannot_be_written_is_kept_beside_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    (tmp_path / "file").write_text("x")
    lines = write_report(tmp_path / "file" / "demo.json", {"speedup": 1.4}, b"PNG")
    (kept,) = (tmp_path / "spare").glob("trnspec-demo-*")
    assert sorted(p.name for p in kept.iterdir()) == ["0-demo.json", "1-demo_sweep.png"]
    assert (kept / "1-demo_sweep.png").read_bytes() == b"PNG"
    assert len(lines) == 2 and str(kept / "1-demo_sweep.png") in lines[1]


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    import trnspec_tools.demo as demo

    def refuse(*_: object) -> None:
        raise AssertionError("the demo started its work before checking --report")

    monkeypatch.setattr(demo, "run_demo", refuse)
    monkeypatch.setattr(demo, "ensure_tiny_models", refuse)


@pytest.mark.parametrize(
    ("report", "field", "problem"),
    [
        ("file/demo.json", "--report", "file: is not a directory"),
        ("dir", "--report", "dir: it is a directory"),
        ("tune.json", "--report", ": its tune.json would overwrite --tuned "),
        ("plots/demo.json", "--report's plot", "demo_sweep.png: it is a directory"),
    ],
    ids=["under-a-file", "a-directory", "the-tuned-input", "its-plot-a-directory"],
)
def test_a_report_destination_that_cannot_be_written_is_refused_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    report: str,
    field: str,
    problem: str,
) -> None:
    _no_work(monkeypatch)
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "plots" / "demo_sweep.png").mkdir(parents=True)
    (tmp_path / "tune.json").write_text("{}")
    argv = ["--report", str(tmp_path / report), "--tuned", str(tmp_path / "tune.json")]
    assert main(argv) == 2
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith(f"error: {field}=/") and problem in line
    assert (tmp_path / "tune.json").read_text() == "{}"


def test_a_report_is_never_written_over_a_device() -> None:
    [line] = write_report(Path("/dev/null"), {"speedup": 1.4})
    assert "it is a device" in line and Path("/dev/null").is_char_device()


def _pair(plain: float, tuned: float, k_used: float | None) -> RoundPair:
    return RoundPair(
        order="plain-first",
        ratio=tuned / plain,
        plain=kept_run(plain),
        candidate=kept_run(tuned, acceptance=AcceptanceFigures(k_used=k_used)),
    )


def test_the_sweep_reports_medians_per_level_with_the_ratios_spread_and_the_window() -> None:
    from trnspec_tools.demo import sweep_rows

    rows = sweep_rows(
        {
            1: [_pair(200, 300, 4.0), _pair(210, 336, 4.0), _pair(190, 304, 4.0)],
            32: [_pair(1000, 1100, 2.0), _pair(1000, 1000, 2.0)],
        }
    )
    assert [r.concurrency for r in rows] == [1, 32]
    one = rows[0]
    assert (one.tokens_per_s_baseline, one.tokens_per_s_tuned) == (200, 304)
    assert one.speedup == pytest.approx(1.6)  # median of 1.5, 1.6, 1.6
    assert (one.speedup_low, one.speedup_high) == (pytest.approx(1.5), pytest.approx(1.6))
    assert (one.rounds, one.verdict) == (3, Verdict.SPECULATION)
    assert one.k_used == 4.0 and rows[1].k_used == 2.0


def test_a_sweep_row_is_written_with_every_field_under_its_own_name() -> None:
    """demo.json's `sweep` rows: one key per field, in the order the file has always had, each
    holding its own field's value (a field dropped or written under another name fails)."""
    from trnspec_tools.demo import SweepRow

    row = SweepRow(
        concurrency=8,
        tokens_per_s_baseline=100.0,
        tokens_per_s_tuned=150.0,
        speedup=1.5,
        speedup_low=1.25,
        speedup_high=1.75,
        rounds=4,
        verdict=Verdict.SPECULATION,
        k_used=3.5,
    )
    names = [f.name for f in dataclasses.fields(SweepRow)]
    assert list(row.to_json()) == names
    assert row.to_json() == {n: getattr(row, n) for n in names} | {"verdict": "speculation"}
    assert dataclasses.replace(row, verdict=None).to_json()["verdict"] is None


def test_a_level_measured_slower_than_the_baseline_in_every_round_is_named_with_what_to_do() -> (
    None
):
    from trnspec_tools.demo import slower_lines, slower_than_baseline, sweep_rows

    rows = sweep_rows(
        {
            1: [_pair(200, 300, 4.0), _pair(210, 336, 4.0)],  # faster
            8: [_pair(1000, 990, 2.0), _pair(1000, 1020, 2.0)],  # the rounds hold 1: not told
            32: [_pair(2000, 1880, 2.0), _pair(2000, 1900, 2.0)],  # slower in every round
        }
    )
    assert slower_than_baseline(rows) == [32]
    assert slower_lines(rows, "k=4") == [
        "concurrency 32: k=4 measured slower than the baseline over its 2 rounds (0.94x, rounds"
        " 0.94-0.95): do not serve this load with it before `make tune-schedule` has measured k"
        " per batch on more rounds (it picks k=0 where speculation does not pay)"
    ]
    # one round bounds nothing; two rounds just below 1 name the level, a round at 1 does not
    assert slower_than_baseline(sweep_rows({1: [_pair(100, 99.99, 1.0)]})) == []
    assert slower_than_baseline(sweep_rows({1: [_pair(100, 99.99, 1.0)] * 2})) == [1]
    assert slower_than_baseline(sweep_rows({1: [_pair(100, 100, 1.0)] * 2})) == []


def test_the_tuned_choice_is_the_tune_result_when_present_else_the_recorded_one(
    tmp_path: Path,
) -> None:
    from trnspec.checks.all_checks import check
    from trnspec.config.serving import apply_overrides, load_profile

    from trnspec_tools.demo import TUNED_DEFAULT, tuned_choice

    assert tuned_choice(tmp_path / "absent.json") == TUNED_DEFAULT
    cfg = apply_overrides(load_profile("local-tiny"), ["max_num_seqs=32", *TUNED_DEFAULT.overrides])
    assert [p for p in check(cfg) if p.field.startswith("speculation")] == []
    result = tmp_path / "tune_schedule.json"
    result.write_text(
        json.dumps(
            {
                "recommendation": {
                    "candidate": "k=2",
                    "candidate_overrides": ["speculation.num_speculative_tokens=2"],
                }
            }
        )
    )
    chosen = tuned_choice(result)
    assert (chosen.name, chosen.overrides, chosen.k) == (
        "k=2",
        ("speculation.num_speculative_tokens=2",),
        2,
    )
    result.write_text("{}")
    with pytest.raises(ValueError, match="not a tune --schedule result"):
        tuned_choice(result)


def test_the_demo_flags_are_parsed_once_into_its_options(tmp_path: Path) -> None:
    import argparse

    from trnspec_tools.demo import TUNED_DEFAULT, add_cli_args, demo_options

    parser = argparse.ArgumentParser()
    add_cli_args(parser)
    argv = ["--tuned", str(tmp_path / "absent.json"), "--set", "max_num_seqs=8", "--requests", "3"]
    opts = demo_options(parser.parse_args(argv))
    assert (opts.tuned, opts.overrides, opts.requests, opts.strict) == (
        TUNED_DEFAULT,
        ("max_num_seqs=8",),
        3,
        False,
    )
    with pytest.raises(ValueError, match="--max-tokens: must be at least 1"):
        demo_options(parser.parse_args(["--max-tokens", "0"]))
