"""bench.py and tune.py against the real local vLLM CPU server (the embedded default).

Minutes, not seconds: each arm restarts the server. Figures depend on the host's load, so the
assertions are about what must hold on any host (counters from the server, the A/B wiring, a
recommendation the config layer accepts), not about a particular speedup.
"""

from __future__ import annotations

import json

import pytest

from trnspec_tools.bench.bench import main as bench_main
from trnspec_tools.tune.tune import check_override
from trnspec_tools.tune.tune import main as tune_main

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_bench_local_spec_vs_baseline_reads_acceptance_from_the_server(tmp_path):
    out = tmp_path / "bench.json"
    code = bench_main(
        [
            "--local",
            "--compare",
            "local",
            "--concurrency",
            "1",
            "--num-prompts",
            "6",
            "--input-len",
            "16",
            "--output-len",
            "48",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    target, baseline = result["runs"]
    assert target["acceptance_source"] == "server-metrics"
    assert 0.0 < target["acceptance_rate"] <= 1.0
    assert (
        1.0
        < target["mean_accepted_length"]
        <= 1
        + target["spec_decode_deltas"]["num_draft_tokens"]
        / target["spec_decode_deltas"]["num_drafts"]
    )
    assert baseline["acceptance_source"] in ("estimate-from-chunks", None)
    assert target["errors"]["total"] == baseline["errors"]["total"] == 0
    assert target["output_tokens"] == baseline["output_tokens"] == 6 * 48
    assert result["comparison"][0]["speedup_output_tokens_per_s"] > 0


def test_tune_local_sweep_writes_an_override_the_profile_accepts(tmp_path):
    out = tmp_path / "tune.json"
    code = tune_main(
        [
            "--k",
            "1,3",
            "--num-prompts",
            "4",
            "--input-len",
            "16",
            "--output-len",
            "48",
            "--out",
            str(out),
            "--no-plots",
        ]
    )
    assert code == 0
    line = out.with_suffix(".override").read_text().strip()
    assert line.startswith("speculation.num_speculative_tokens=")
    assert check_override(line, "local-tiny") is None
