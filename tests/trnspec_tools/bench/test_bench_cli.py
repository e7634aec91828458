"""bench.py end to end against fake servers: A/B figures, files written, bad input named."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx
import pytest
from fake_openai_server import running

from trnspec_tools.bench.bench import arms_of, build_parser, main
from trnspec_tools.bench.options import bench_options

REQUIRED = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")


def _arms_by_arrival(target: str, baseline: str) -> list[str]:
    """Which fake server the requests reached, in the order they arrived (the servers' own
    arrival times, one clock), runs of one arm merged: ["target", "baseline", "target"]."""
    arrivals = sorted(
        (r["arrival"], arm)
        for arm, url in (("target", target), ("baseline", baseline))
        for r in httpx.get(url + "/debug/timings").json()
    )
    return [arm for arm, _ in itertools.groupby(arm for _, arm in arrivals)]


def test_ab_comparison_reports_the_known_speedup_and_writes_every_output(tmp_path):
    """Target: 4 tokens per 40 ms step (k=3, all accepted); baseline: 1 token per 40 ms step.
    For 25 tokens: target 80 + 6*40 = 320 ms, baseline 80 + 24*40 = 1040 ms, so 3.25x.
    (40 ms steps rather than 20: on a loaded 2-core host a late reader sees 20 ms chunks merged
    into bursts, which the tool rightly refuses to turn into per-token changes.)"""
    out = tmp_path / "r" / "bench.json"
    with (
        running("--ttft-ms", "80", "--itl-ms", "40", "--k", "3", "--tokens-per-step", "4") as t,
        running(
            "--ttft-ms",
            "80",
            "--itl-ms",
            "40",
            "--k",
            "1",
            "--tokens-per-step",
            "1",
            "--no-spec-metrics",
        ) as b,
    ):
        code = main(
            [
                "--endpoint",
                t,
                "--compare",
                b,
                "--concurrency",
                "1,2",
                "--num-prompts",
                "4",
                "--input-len",
                "8",
                "--output-len",
                "25",
                "--out",
                str(out),
                "--no-progress",
                "--slo-tpot-ms",
                "20",
            ]
        )
        served = _arms_by_arrival(t, b)
    assert code == 0
    result = json.loads(out.read_text())
    # measured back to back, the order reversed at the second level: target, baseline (c=1),
    # baseline, target (c=2); the servers' own arrival times (one clock) show it
    order = [["target", 1], ["baseline", 1], ["baseline", 2], ["target", 2]]
    assert result["config"]["measurement_order"] == order
    assert served == ["target", "baseline", "target"]
    for key in (
        *REQUIRED,
        "output_tokens_per_s",
        "requests_per_s",
        "acceptance_rate",
        "mean_accepted_length",
        "cost_per_1m_output_tokens_usd",
        "errors",
        "acceptance_source",
    ):
        assert key in result, key
    for key in REQUIRED:
        assert set(result[key]) >= {"p50", "p90", "p99", "mean"}
    assert [(r["arm"], r["concurrency"]) for r in result["runs"]] == [
        ("target", 1),
        ("baseline", 1),
        ("target", 2),
        ("baseline", 2),
    ]
    # each level's figures are those of its two runs, target over baseline (how close a run's
    # timing is to what the servers did is test_bench_accuracy's; a tolerance on the known
    # 3.25x here would be a bound on the host's load)
    runs = {(r["arm"], r["concurrency"]): r for r in result["runs"]}
    for comp, level in zip(result["comparison"], (1, 2), strict=True):
        t, b = runs["target", level], runs["baseline", level]
        assert comp["speedup_output_tokens_per_s"] == pytest.approx(
            t["output_tokens_per_s"] / b["output_tokens_per_s"], rel=1e-12
        )
        for figure in ("tpot", "itl"):
            p50 = t[f"{figure}_ms"]["p50"] / b[f"{figure}_ms"]["p50"]
            assert comp[f"{figure}_p50_change"] == pytest.approx(p50 - 1, rel=1e-12, abs=1e-12)
    target, baseline = result["runs"][0], result["runs"][1]
    assert target["acceptance_source"] == "server-metrics" and target["acceptance_rate"] == 1.0
    assert baseline["acceptance_source"] == "estimate-from-chunks"
    assert baseline["mean_accepted_length"] == 1.0
    assert target["goodput"]["good_requests"] == 4 and baseline["goodput"]["good_requests"] == 0
    md = out.with_suffix(".md").read_text()
    assert "Speculative vs baseline" in md and "3.2" in md
    assert "order target c=1, baseline c=1, baseline c=2, target c=2" in md
    for png in ("bench_latency.png", "bench_acceptance.png"):
        assert (out.parent / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.parent.glob(".*tmp")), "temporary files left behind"


def test_rounds_pair_the_arms_abba_and_the_speedup_is_their_median_with_its_range(tmp_path):
    """--rounds 2 at one level: target, baseline, baseline, target (the servers' own arrival
    times show it); the level's speedup is the median of two paired ratios (9 tokens: target
    80 + 2*40 = 160 ms, baseline 80 + 8*40 = 400 ms: about 2.5x), each the ratio of its round's
    two runs, and every round's run is in the JSON."""
    out = tmp_path / "bench.json"
    spec = ("--ttft-ms", "80", "--itl-ms", "40")
    with (
        running(*spec, "--k", "3", "--tokens-per-step", "4") as t,
        running(*spec, "--k", "1", "--tokens-per-step", "1", "--no-spec-metrics") as b,
    ):
        code = main(
            ["--endpoint", t, "--compare", b, "--concurrency", "1", "--rounds", "2",
             "--num-prompts", "2", "--input-len", "8", "--output-len", "9", "--out", str(out),
             "--no-progress", "--no-plots"]
        )  # fmt: skip
        served = _arms_by_arrival(t, b)
    assert code == 0
    result = json.loads(out.read_text())
    assert result["config"]["rounds"] == 2
    order = [["target", 1], ["baseline", 1], ["baseline", 1], ["target", 1]]
    assert result["config"]["measurement_order"] == order
    assert served == ["target", "baseline", "target"]
    by_round = [(r["arm"], r["round"]) for r in result["runs_by_round"]]
    assert by_round == [("target", 1), ("target", 2), ("baseline", 1), ("baseline", 2)]
    assert [r["arm"] for r in result["runs"]] == ["target", "baseline"]
    (comp,) = result["comparison"]
    ratios = comp["speedup_rounds"]
    tps = {(r["arm"], r["round"]): r["output_tokens_per_s"] for r in result["runs_by_round"]}
    paired = [tps["target", i] / tps["baseline", i] for i in (1, 2)]  # round i with round i
    assert ratios == pytest.approx(paired, rel=1e-12)
    assert comp["speedup_output_tokens_per_s"] == pytest.approx(sum(ratios) / 2)
    assert (comp["speedup_low"], comp["speedup_high"]) == (min(ratios), max(ratios))
    md = out.with_suffix(".md").read_text()
    assert f"({min(ratios):.2f}-{max(ratios):.2f})" in md
    assert "2 rounds of each arm per level" in md and "runs_by_round" in md


def test_unreachable_endpoint_still_writes_a_report_and_exits_1(tmp_path):
    out = tmp_path / "down.json"
    code = main(
        [
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--num-prompts",
            "2",
            "--max-retries",
            "0",
            "--warmup",
            "0",
            "--out",
            str(out),
            "--no-progress",
            "--no-plots",
        ]
    )
    assert code == 1
    assert json.loads(out.read_text())["errors"] == {"total": 2, "connect": 2}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--endpoint", "http://x", "--local"], "--endpoint/--local"),
        ([], "--endpoint/--local"),
        (["--endpoint", "ftp://x"], "--endpoint=ftp://x"),
        (["--endpoint", "http://x", "--compare", "nowhere"], "--compare=nowhere"),
        (["--endpoint", "http://x", "--concurrency", "1,0"], "--concurrency=1,0"),
        (["--endpoint", "http://x", "--concurrency", "a"], "--concurrency=a"),
        (["--endpoint", "http://x", "--num-prompts", "0"], "--num-prompts=0"),
        (["--endpoint", "http://x", "--dataset", "/nonexistent.jsonl"], "--dataset="),
        (["--endpoint", "http://x", "--instance-type", "p5.48xlarge"], "--instance-type="),
        (["--endpoint", "http://x", "--instance-type", "trn2u.48xlarge"], "--price-per-hour"),
        (["--endpoint", "http://x", "--set", "a=b"], "--set"),
        (["--endpoint", "http://x", "--timeout", "0"], "--timeout: 0:"),
        (["--endpoint", "http://x", "--timeout", "nan"], "--timeout: nan:"),
        (["--endpoint", "http://x", "--concurrency", "1e9"], "--concurrency=1e9"),
        (["--endpoint", "http://x", "--concurrency", "1000000000"], "<= 100000"),
        (["--endpoint", "http://x", "--slo-ttft-ms", "inf"], "--slo-ttft-ms: inf:"),
        (["--endpoint", "http://x", "--price-per-hour", "-1"], "--price-per-hour: -1:"),
        (["--endpoint", "http://x", "--request-rate", "nan"], "--request-rate: nan:"),
        (["--endpoint", "http://u:secret@x"], "--api-key-env"),
        (["--endpoint", "http://x:99999"], "--endpoint="),
        (["--endpoint", "http://[::1"], "--endpoint="),
    ],
)
def test_bad_input_exits_2_with_the_flag_named_and_no_traceback(tmp_path, capsys, argv, needle):
    """Exit 2 either from a check in main or from argparse (a flag's type refused the value)."""
    try:
        code = main([*argv, "--out", str(tmp_path / "x.json"), "--no-progress"])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_an_out_that_is_a_device_is_refused_and_left_alone(capsys):
    code = main(["--endpoint", "http://x", "--out", "/dev/null", "--no-progress"])
    assert code == 2 and "it is a device" in capsys.readouterr().err
    assert Path("/dev/null").is_char_device()


def test_the_local_baseline_runs_every_override_of_the_target_with_speculation_off(tmp_path):
    """--compare local measures the same deployment without speculation: a baseline that lost
    the target's --set (its batch limit, say) would be another deployment."""
    args = build_parser().parse_args(
        ["--local", "--compare", "local", "--set", "max_num_seqs=4",
         "--set", "speculation.num_speculative_tokens=2", "--out", str(tmp_path / "b.json")]
    )  # fmt: skip
    args.endpoint = None
    target, baseline = arms_of(bench_options(args))
    assert target.local_overrides == ["max_num_seqs=4", "speculation.num_speculative_tokens=2"]
    assert baseline.local_overrides == [*target.local_overrides, "speculation.method=none"]


def test_a_server_that_requires_the_key_is_asked_with_it_for_its_model_and_its_answers(
    tmp_path, monkeypatch
):
    """No --model: the model comes from /v1/models, which answers 401 without the key (read
    from the variable --api-key-env names, so no default can stand in for it)."""
    monkeypatch.delenv("TRNSPEC_API_KEY", raising=False)
    monkeypatch.setenv("BENCH_TEST_KEY", "sekret")
    out = tmp_path / "bench.json"
    with running("--ttft-ms", "5", "--itl-ms", "5", "--api-key", "sekret", "--model", "m7") as t:
        code = main(
            ["--endpoint", t, "--api-key-env", "BENCH_TEST_KEY", "--num-prompts", "2",
             "--input-len", "4", "--output-len", "4", "--warmup", "0", "--out", str(out),
             "--no-progress", "--no-plots"]
        )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    assert result["config"]["model"] == "m7"
    assert result["completed"] == 2


def test_a_baseline_that_produced_nothing_fails_the_run_though_the_target_completed(tmp_path):
    out = tmp_path / "bench.json"
    with running("--ttft-ms", "5", "--itl-ms", "5") as t:
        code = main(
            ["--endpoint", t, "--compare", "http://127.0.0.1:9", "--model", "fake",
             "--num-prompts", "2", "--input-len", "4", "--output-len", "4", "--warmup", "0",
             "--max-retries", "0", "--out", str(out), "--no-progress", "--no-plots"]
        )  # fmt: skip
    assert code == 1
    completed = {r["arm"]: r["completed"] for r in json.loads(out.read_text())["runs"]}
    assert completed == {"target": 2, "baseline": 0}
