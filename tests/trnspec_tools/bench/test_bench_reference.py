"""bench.py agrees with the reference tool, `vllm bench serve`, on the same server and prompts."""

from __future__ import annotations

import pytest
from fake_openai_server import running

from trnspec_tools.bench.bench_reference import compare_tools, markdown
from trnspec_tools.bench.bench_workload import synthetic_prompts

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
    from trnspec_tools.bench.bench_reference import _median_run

    runs = [
        {"output_tokens_per_s": v, "itl_ms": {"p50": v / 10, "mean": 1.0}, "arm": "x"}
        for v in (100.0, 300.0, 200.0)
    ]
    m = _median_run(runs)
    assert m["output_tokens_per_s"] == 200.0 and m["itl_ms"] == {"p50": 20.0, "mean": 1.0}
    assert m["arm"] == "x"
