"""bench.py against the real local vLLM CPU server (the embedded default); tune's run on it is
tests/trnspec_tools/tune/test_tune_plain_e2e.py.

`--local --compare local` runs both arms on the session's shared servers (server_pool.py: the
local profile's k=4 and plain). Figures depend on the host's load, so the assertions are about
what must hold on any host (counters from the server, the A/B wiring, a speedup bench did not
have to leave out), not about a particular speedup.
"""

from __future__ import annotations

import json

import pytest
from server_pool import ServerPool

from trnspec_tools.bench.bench import main as bench_main

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_bench_local_spec_vs_baseline_reads_acceptance_from_the_server(
    servers_from_the_pool: ServerPool, tmp_path
):
    """A speculative step emits at most the tokens per step the counters show: a speedup above
    that means the baseline arm ran slower than plain decoding, as it did at concurrency 8 while
    vLLM's async scheduling stalled the CPU server (3.9x measured from k=1); bench then leaves
    the speedup out, and this test fails."""
    out = tmp_path / "bench.json"
    code = bench_main(
        [
            "--local",
            "--compare",
            "local",
            "--concurrency",
            "1,4",
            "--num-prompts",
            "8",
            "--input-len",
            "16",
            "--output-len",
            "32",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    runs = result["runs"]
    assert len(runs) == 4  # target and baseline at each of the two concurrencies
    for target in (r for r in runs if r["arm"] == "target"):
        assert target["acceptance_source"] == "server-metrics"
        assert 0.0 < target["acceptance_rate"] <= 1.0
        deltas = target["spec_decode_deltas"]
        assert (
            1.0
            < target["mean_accepted_length"]
            <= 1 + deltas["num_draft_tokens"] / deltas["num_drafts"]
        )
    for baseline in (r for r in runs if r["arm"] == "baseline"):
        # plain decoding has no window: no acceptance rate, whatever its chunks look like
        assert baseline["acceptance_source"] in ("estimate-from-chunks", None)
        assert baseline["acceptance_rate"] is None
    assert all(r["errors"]["total"] == 0 and r["output_tokens"] == 8 * 32 for r in runs)
    for comparison in result["comparison"]:
        assert comparison["speedup_output_tokens_per_s"] is not None, comparison
        assert comparison["speedup_output_tokens_per_s"] > 0
