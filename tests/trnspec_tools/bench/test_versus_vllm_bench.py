"""bench.py agrees with the reference tool, `vllm bench serve`, on the same server and prompts."""

from __future__ import annotations

import pytest
from fake_openai_server import running

from trnspec_tools.bench.versus_vllm_bench import compare_tools, markdown
from trnspec_tools.bench.workload import synthetic_prompts

pytest.importorskip("vllm.benchmarks.serve")


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [4])
def test_bench_and_vllm_bench_serve_agree_on_throughput_and_itl(tmp_path, concurrency, capsys):
    specs = synthetic_prompts(8 * concurrency, 16, 16, seed=0)
    with running("--ttft-ms", "60", "--itl-ms", "25", "--tokens-per-step", "1", "--k", "1") as url:
        result = compare_tools(url, "fake", specs, concurrency, None, tmp_path)
    table = {row["metric"]: row for row in result["table"]}
    with capsys.disabled():
        print("\n" + markdown(result["table"], f"concurrency {concurrency}"))
    assert table["completed"]["bench.py"] == table["completed"]["vllm bench serve"] == len(specs)
    for metric in ("output tokens/s", "ITL p50 ms", "TPOT p50 ms", "E2E p50 ms"):
        assert abs(table[metric]["difference"]) < 0.05, table[metric]


def test_repeats_are_summarised_by_per_figure_medians():
    from trnspec_tools.bench.versus_vllm_bench import _median_run

    runs = [
        {"output_tokens_per_s": v, "itl_ms": {"p50": v / 10, "mean": 1.0}, "arm": "x"}
        for v in (100.0, 300.0, 200.0)
    ]
    m = _median_run(runs)
    assert m["output_tokens_per_s"] == 200.0 and m["itl_ms"] == {"p50": 20.0, "mean": 1.0}
    assert m["arm"] == "x"


def test_a_figure_differs_only_when_its_pairs_show_it_beyond_the_tolerance():
    from trnspec_tools.bench.versus_vllm_bench import differs_beyond, pair_ratios

    def pairs(ratios: list[float]) -> dict:
        ours = [{"output_tokens_per_s": 100.0 * r} for r in ratios]
        refs = [{"output_throughput": 100.0} for _ in ratios]
        return pair_ratios(ours, refs)["output tokens/s"]

    # A CI run on a busy 2-core host: median 1.035, but pairs reach down to 1.014.
    noisy = pairs([1.014, 1.057, 1.016, 1.018, 1.085, 1.052, 1.045, 1.025])
    assert noisy["median_interval_90"] == (1.016, 1.057)
    assert not differs_beyond(noisy, 0.03)
    # The old httpx client: every pair 5-9 % slow.
    biased = pairs([0.93, 0.92, 0.95, 0.94, 0.91, 0.93, 0.94, 0.92])
    assert differs_beyond(biased, 0.03)
    # Fast beyond the band counts too (a timing bug that flatters the server).
    assert differs_beyond(pairs([1.06, 1.05, 1.08, 1.07, 1.04, 1.06, 1.09, 1.05]), 0.03)
    # Four pairs cannot show anything at 90 %: not "agrees".
    assert differs_beyond(pairs([1.0, 1.0, 1.0, 1.0]), 0.03)


def test_at_a_family_wise_confidence_eight_pairs_are_judged_on_their_range():
    """Three figures judged together at 90 % are each judged at 1 - 0.1/3: with 8 pairs the
    median's interval is then their range."""
    from trnspec_tools.bench.versus_vllm_bench import differs_beyond, pair_ratios

    def pairs(ratios: list[float]) -> dict:
        ours = [{"output_tokens_per_s": 100.0 * r} for r in ratios]
        refs = [{"output_throughput": 100.0} for _ in ratios]
        return pair_ratios(ours, refs)["output tokens/s"]

    each = 1 - 0.1 / 3
    # The CI run that failed at 90 %: its second- and seventh-ranked pairs both above 1.03.
    drifting = pairs([1.105, 1.153, 0.893, 1.043, 1.043, 1.064, 1.112, 1.081])
    assert differs_beyond(drifting, 0.03)
    assert not differs_beyond(drifting, 0.03, each)
    # Every pair beyond the band on one side still differs, slow or fast.
    assert differs_beyond(pairs([0.93, 0.92, 0.95, 0.94, 0.91, 0.93, 0.94, 0.92]), 0.03, each)
    assert differs_beyond(pairs([1.06, 1.05, 1.08, 1.07, 1.04, 1.06, 1.09, 1.05]), 0.03, each)
    # Five pairs cannot reach 1 - 0.1/3 (the range covers 1 - 2/32 = 93.75 %): not "agrees".
    assert differs_beyond(pairs([1.0, 1.0, 1.0, 1.0, 1.0]), 0.03, each)


@pytest.mark.slow
def test_both_tools_send_the_api_key_from_the_named_environment_variable(
    tmp_path, monkeypatch, capsys
):
    from fault_server import fault_server

    from trnspec_tools.bench.versus_vllm_bench import main

    monkeypatch.setenv("MY_KEY", "s3cret")
    monkeypatch.setenv("OPENAI_API_KEY", "not-this-one")
    with fault_server() as server:
        argv = ["--endpoint", server.url, "--api-key-env", "MY_KEY", "--concurrency", "1"]
        code = main([*argv, "--num-prompts", "2", "--output-len", "6"])
        seen = list(server.auth_headers)
    out = capsys.readouterr().out
    assert code == 0, out
    # warm-up and measured requests of bench.py and of vllm bench serve: 2 x (1 + 2)
    assert seen == ["Bearer s3cret"] * 6
    assert "| completed | 2.00 | 2.00 | +0.0% |" in out


def test_an_unset_api_key_env_is_refused_before_anything_runs(capsys):
    from trnspec_tools.bench.versus_vllm_bench import main

    assert main(["--endpoint", "http://127.0.0.1:9", "--api-key-env", "NOPE_NOT_SET"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--api-key-env=NOPE_NOT_SET" in err
