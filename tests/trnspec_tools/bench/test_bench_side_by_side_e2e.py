"""bench.py agrees with `vllm bench serve` within 3 % on the real local vLLM CPU server (issue 14).

Both tools load the same shared speculative server (tiny pair, k=4, greedy) with the same 32
prompts from a JSONL file, 64 output tokens with EOS ignored, concurrency 4 and one warm-up
request per slot, after a whole untimed warm-up round of each. They alternate (ours first, then
vLLM's first, ...), and each figure is compared as the median over repeats of the ratio between
the two runs of one repeat: the two ran back to back, so drift on a shared 2-core host (other
work starting and stopping) cancels within a pair, and the median drops the pairs it hit
unevenly. The criterion is statistical: a figure fails when the pairs show, at a family-wise 90 %
confidence, that the median ratio lies beyond 3 % (its distribution-free interval, the range of the
6 sorted ratios, misses the band 0.97-1.03 entirely). A point estimate alone cannot carry 3 % on a
shared 2-core host: one CI run's pairs spread from 1.01 to 1.09 with nothing wrong in either
tool, while the 7 % bias of the old client put every pair below 0.95.
The reference tool runs in its own interpreter (as `vllm bench serve` does, kept up between
runs); bench.py runs in this one, so any client CPU it burns competes with the server exactly as
in real use.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trnspec_tools.bench.versus_vllm_bench import compare_tools, differs_beyond, markdown
from trnspec_tools.bench.workload import load_dataset
from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.local_engine.tiny_corpus import completion_prompts

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]

pytest.importorskip("vllm.benchmarks.serve")

NUM_PROMPTS, OUTPUT_LEN, CONCURRENCY, REPEATS = 32, 64, 4, 6
RATIO_TOLERANCE = 0.03
#: Three figures are judged: each at 1 - 0.1/3, so that the three together wrongly fail one run in
#: ten at most (Bonferroni). With 6 pairs that interval is their range (it holds the median with
#: probability 1 - 2/2^6 = 96.9 %, the fewest pairs that reach 96.7 %; 8 pairs cost two more
#: repeats, about 40 s, for nothing the judgement uses): a figure fails when every pair lies
#: beyond 3 % on one side, as every pair of the old client's did. Judged at 90 % each,
#: a CI run on a busy host failed with pairs from 0.89 to 1.15 (median 1.07); the same test alone
#: passed at median 0.97.
FIGURES = ("output tokens/s", "ITL p50 ms", "TPOT p50 ms")
CONFIDENCE = 1 - 0.1 / len(FIGURES)
ACCEPTANCE_TOLERANCE = 0.01


def test_bench_agrees_with_vllm_bench_serve_on_the_real_server(
    speculative_server: LocalServer, tmp_path, capsys
):
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text(
        "".join(json.dumps({"prompt": p}) + "\n" for p in completion_prompts(NUM_PROMPTS, seed=7))
    )
    specs = load_dataset(dataset, NUM_PROMPTS, OUTPUT_LEN, seed=0)
    result = compare_tools(
        speculative_server.base_url,
        speculative_server.model,
        specs,
        CONCURRENCY,
        tokenizer=Path(speculative_server.config.target.source),
        work=tmp_path,
        repeats=REPEATS,
        warmup_rounds=1,
    )
    ratios = result["pair_ratios"]
    load = os.getloadavg()
    with capsys.disabled():
        print("\n" + markdown(result["table"], "bench.py vs vllm bench serve (medians)"))
        for name, block in ratios.items():
            print(f"{name}: {block}")
        print(f"order per repeat: {result['order']}; load average {load}")
    table = {row["metric"]: row for row in result["table"]}
    assert table["completed"]["bench.py"] == table["completed"]["vllm bench serve"] == NUM_PROMPTS
    for name in FIGURES:
        assert not differs_beyond(ratios[name], RATIO_TOLERANCE, CONFIDENCE), (name, ratios[name])
    acc = ratios["acceptance rate"]["median_difference"]
    assert acc is not None and abs(acc) <= ACCEPTANCE_TOLERANCE, ratios["acceptance rate"]
