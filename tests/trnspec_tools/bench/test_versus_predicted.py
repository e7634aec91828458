"""bench.py --profile: the Trn2 model's prediction next to what was measured, or absent with why."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fake_openai_server import running
from made_runs import deltas, made_run
from trnspec.config.serving import ConfigError, load_profile
from trnspec.perf.profile_model import profile_model

from trnspec_tools.bench.bench import main
from trnspec_tools.bench.run_result import AcceptanceFigures, RunResult
from trnspec_tools.bench.versus_predicted import predict_run, setup
from trnspec_tools.bench.workload import synthetic_prompts

PROFILE = "llama31-8b-eagle3"  # k=3, max_num_seqs 4, trn2.3xlarge
INPUT_LEN, OUTPUT_LEN = 8, 25
#: bench's synthetic prompts have exactly --input-len words
PROMPTS = synthetic_prompts(3, INPUT_LEN, OUTPUT_LEN, seed=0)


def expected(tau: float, k: int, batch: int) -> tuple[float, float, float]:
    """TPOT ms, tokens/s and speedup straight from the profile's model (each arm on its own stack
    group: k = 0 on the plain twin's, k > 0 on the speculative one's)."""
    m = profile_model(load_profile(PROFILE), INPUT_LEN + OUTPUT_LEN // 2)
    points = m.grid(lambda _k: tau, [0, k], [batch])
    p = next(p for p in points if p.k == k)
    return p.tpot_s * 1e3, p.output_tokens_per_s, p.speedup


def measured_run(concurrency: int = 2, **acceptance: object) -> RunResult:
    """A target run at `concurrency` (TPOT 9 ms, 150 tokens/s) whose counters show 10 drafts of
    3 tokens with 15 accepted; `acceptance` replaces acceptance figures."""
    figures = AcceptanceFigures(
        acceptance_rate=0.5,
        acceptance_source="server-metrics",
        spec_decode_deltas=deltas(10, 30, 15, [8, 5, 2]),
    )
    return made_run(
        output_tokens_per_s=150.0,
        tpot_p50=9.0,
        concurrency=concurrency,
        acceptance=dataclasses.replace(figures, **acceptance),  # type: ignore[arg-type]
    )


def test_prediction_uses_the_counters_mean_accepted_length_and_the_concurrency_as_batch():
    ps = setup(PROFILE, [], PROMPTS, OUTPUT_LEN, local=False)
    assert ps is not None
    block = predict_run(ps, measured_run(), num_prompts=8, speculative=True)
    tpot, tps, speedup = expected(2.5, 3, 2)  # 1 + 15 accepted / 10 drafts
    assert block["inputs"]["mean_accepted_length"] == 2.5
    assert block["inputs"]["batch"] == 2 and block["inputs"]["k"] == 3
    assert block["predicted"]["tpot_ms"] == pytest.approx(tpot, rel=1e-12)
    assert block["predicted"]["output_tokens_per_s"] == pytest.approx(tps, rel=1e-12)
    assert block["predicted"]["speedup"] == pytest.approx(speedup, rel=1e-12)
    assert block["measured_over_predicted"]["tpot_ms"] == pytest.approx(9.0 / tpot)
    assert block["measured_over_predicted"]["output_tokens_per_s"] == pytest.approx(150.0 / tps)
    assert "model estimate" in block["label"]


def test_a_concurrency_above_max_num_seqs_is_predicted_at_the_servers_batch_with_a_note():
    ps = setup(PROFILE, [], PROMPTS, OUTPUT_LEN, local=False)
    assert ps is not None
    block = predict_run(ps, measured_run(concurrency=16), num_prompts=32, speculative=True)
    assert block["inputs"]["batch"] == 4
    assert "max_num_seqs" in block["notes"][0]


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"acceptance_source": "estimate-from-chunks", "spec_decode_deltas": None}, "counters"),
        (
            {"acceptance_source": None, "spec_decode_deltas": None, "acceptance_note": "reset"},
            "reset",
        ),
        (
            {"spec_decode_deltas": deltas(10, 40, 15)},
            "k=3",
        ),
    ],
)
def test_no_measured_acceptance_gives_no_prediction_and_says_why(over, reason):
    ps = setup(PROFILE, [], PROMPTS, OUTPUT_LEN, local=False)
    assert ps is not None
    block = predict_run(ps, measured_run(**over), num_prompts=8, speculative=True)
    assert block["predicted"] is None
    assert reason in block["reason"]


def test_a_baseline_arm_is_predicted_without_speculation():
    ps = setup(PROFILE, [], PROMPTS, OUTPUT_LEN, local=False)
    assert ps is not None
    run = measured_run(spec_decode_deltas=None, acceptance_source=None)
    block = predict_run(ps, run, num_prompts=8, speculative=False)
    tpot, tps, _ = expected(1.0, 0, 2)
    assert block["inputs"]["k"] == 0
    assert block["predicted"]["tpot_ms"] == pytest.approx(tpot, rel=1e-12)
    assert block["predicted"]["output_tokens_per_s"] == pytest.approx(tps, rel=1e-12)


@pytest.mark.parametrize("profile", ["local-tiny", "no-such-profile"])
def test_a_profile_the_trn2_model_cannot_cost_is_refused_before_measuring(profile):
    with pytest.raises(ConfigError) as err:
        setup(profile, [], PROMPTS, OUTPUT_LEN, local=False)
    assert "--profile" in str(err.value)


def test_bench_against_the_fake_server_reports_predicted_next_to_measured(tmp_path, capsys):
    """Target: k=3, every draft accepted (4 tokens per step) so the counters give a mean accepted
    length of exactly 4; baseline: no speculation, no counters."""
    out = tmp_path / "bench.json"
    common = ["--ttft-ms", "40", "--itl-ms", "20", "--k", "3"]
    with (
        running(*common, "--tokens-per-step", "4") as t,
        running(*common, "--tokens-per-step", "1", "--no-spec-metrics") as b,
    ):
        code = main(
            [
                "--endpoint", t, "--compare", b, "--concurrency", "1,2",
                "--num-prompts", "4", "--input-len", str(INPUT_LEN),
                "--output-len", str(OUTPUT_LEN), "--out", str(out), "--no-progress",
                "--no-plots", "--profile", PROFILE,
            ]
        )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    assert result["config"]["profile"] == PROFILE
    for r in result["runs"]:
        c = r["concurrency"]
        pred = r["prediction"]
        k, tau = (3, 4.0) if r["arm"] == "target" else (0, 1.0)
        tpot, tps, _ = expected(tau, k, c)
        assert pred["inputs"]["batch"] == c and pred["inputs"]["k"] == k
        assert pred["inputs"].get("mean_accepted_length", 1.0) == tau
        assert pred["predicted"]["tpot_ms"] == pytest.approx(tpot, rel=1e-12)
        assert pred["predicted"]["output_tokens_per_s"] == pytest.approx(tps, rel=1e-12)
        assert pred["measured"]["output_tokens_per_s"] == r["output_tokens_per_s"]
    for c in result["comparison"]:
        p = c["prediction"]
        assert p["predicted_speedup"] == pytest.approx(expected(4.0, 3, c["concurrency"])[2])
        assert p["measured_speedup"] == c["speedup_output_tokens_per_s"]
    md = out.with_suffix(".md").read_text()
    assert "Predicted vs measured" in md and "model estimate" in md


def test_bench_without_counters_reports_no_prediction_with_the_reason(tmp_path):
    out = tmp_path / "bench.json"
    with running("--ttft-ms", "20", "--itl-ms", "10", "--k", "3", "--tokens-per-step", "2",
                 "--no-spec-metrics") as t:  # fmt: skip
        code = main(
            [
                "--endpoint", t, "--num-prompts", "2", "--input-len", "4",
                "--output-len", "9", "--out", str(out), "--no-progress", "--no-plots",
                "--profile", PROFILE,
            ]
        )  # fmt: skip
    assert code == 0
    pred = json.loads(out.read_text())["runs"][0]["prediction"]
    assert pred["predicted"] is None
    assert "no measured acceptance" in pred["reason"]


def test_bench_refuses_a_cpu_profile_in_one_line(tmp_path, capsys):
    code = main(
        [
            "--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "b.json"),
            "--profile", "local-tiny",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "--profile" in err and "Trn2" in err
    assert not (tmp_path / "b.json").exists()
