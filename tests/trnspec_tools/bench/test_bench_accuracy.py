"""The benchmark reports what a server with exactly known behaviour does.

The fake server (fake_openai_server.py, its own process) sends the first token after a known
TTFT and then one chunk per simulated step on an absolute schedule, records when it really wrote
each chunk, and advances spec-decode counters by known amounts. Tolerances: medians within 5 % of
the server's record (plus 2 ms for TTFT and end-to-end, which also carry the loopback request and
the client's send path, about 0.5 ms with httpx measured here); counter figures exact. Delays of
20-80 ms keep scheduler noise on 2 shared cores small against them.
"""

from __future__ import annotations

import asyncio
import json
import statistics

import pytest
from fake_openai_server import actual, plan_chunks, running

from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.workload import load_dataset, synthetic_prompts
from trnspec_tools.client.request_spec import RequestSpec

TTFT_MS, ITL_MS = 80.0, 25.0
INF = float("inf")


def run(url: str, specs: list[RequestSpec], concurrency: int, **opts: object) -> dict:
    """One run, as bench.py writes it (RunResult.to_json)."""
    options = RunOptions(**opts)  # type: ignore[arg-type]
    level = run_level(url, "fake", specs, concurrency, options, price_per_hour=36.0)
    return asyncio.run(level).to_json()


def close(measured: float, expected: float, rel: float = 0.05, abs_ms: float = 0.0) -> bool:
    return abs(measured - expected) <= rel * expected + abs_ms


@pytest.mark.parametrize(
    ("concurrency", "num_prompts", "rate"),
    [(1, 6, INF), (4, 8, INF), (4, 12, 12.0), (16, 32, 40.0)],
    ids=["c1-closed", "c4-closed", "c4-poisson", "c16-poisson"],
)
def test_reported_latency_medians_match_what_the_server_did(concurrency, num_prompts, rate):
    """The reference is the server's own record of when it wrote each chunk (its schedule is
    80 ms then 25 ms, but on a loaded host the server itself can be late; that lateness is real
    and the tool must report it). What remains between the two is the tool's error plus
    loopback transport. Closed loop with equal requests sends in synchronized bursts: each wave's
    requests leave one client at the same instant and queue for its CPU and the server's before
    the server's handler (where its record starts) runs: real, load-dependent time the server
    cannot see (10 ms at c=4 under load 4.6 on 2 cores). The same holds with 16 streams in
    flight on one client process: on a loaded host the client is descheduled between the
    server's write and its read (a CI run under 4 test workers failed c16's TTFT median this
    way). There TTFT and end-to-end are held to never under-reporting; their accuracy is asserted
    where neither bursts nor many streams load the client (c=1, Poisson with c=4)."""
    output_len = 12  # one token per chunk: 1 from prefill + 11 steps
    specs = synthetic_prompts(num_prompts, 16, output_len, seed=1)
    with running(
        "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens-per-step", "1", "--k", "1"
    ) as url:
        r = run(url, specs, concurrency, request_rate=rate, seed=7)
        truth = actual(url, skip=concurrency)  # the warm-up is one request per slot
    ms = {k: [v * 1000.0 for v in vs] for k, vs in truth.items()}
    assert r["errors"] == {"total": 0}
    assert r["completed"] == num_prompts
    assert r["itl_ms"]["count"] == len(ms["itl"]) == num_prompts * (output_len - 1)
    assert r["ttft_ms"]["p50"] >= statistics.median(ms["ttft"]) - 0.5  # never under-reports
    if concurrency == 1 or (rate != INF and concurrency <= 4):
        assert close(r["ttft_ms"]["p50"], statistics.median(ms["ttft"]), abs_ms=2.0), r["ttft_ms"]
        assert close(r["e2e_ms"]["p50"], statistics.median(ms["e2e"]), abs_ms=2.0), r["e2e_ms"]
    assert close(r["itl_ms"]["p50"], statistics.median(ms["itl"])), r["itl_ms"]
    tpot_truth = statistics.median(
        (e - t) / (output_len - 1) for e, t in zip(ms["e2e"], ms["ttft"], strict=True)
    )
    assert close(r["tpot_ms"]["p50"], tpot_truth), r["tpot_ms"]
    expected_tps = num_prompts * output_len / (ms["window"][0] / 1000.0)
    assert close(r["output_tokens_per_s"], expected_tps, rel=0.03), r["output_tokens_per_s"]
    assert r["cost_per_1m_output_tokens_usd"] == pytest.approx(
        36.0 / (r["output_tokens_per_s"] * 3600) * 1e6
    )
    assert r["e2e_ms"]["p50"] >= statistics.median(ms["e2e"]) - 0.5
    # and the delays were real: the server writes on an absolute schedule that a loaded host can
    # only make late, never early (so the comparisons above are not of zeros)
    assert min(ms["ttft"]) >= TTFT_MS - 1.0
    assert min(ms["e2e"]) >= TTFT_MS + (output_len - 1) * ITL_MS - 1.0


def expected_counters(num_requests: int, output_len: int, pattern: list[int], k: int) -> dict:
    steps = plan_chunks(output_len, pattern)[1:]
    accepted = [n - 1 for n in steps]
    per_pos = [sum(1 for a in accepted if a > i) for i in range(k)]
    return {
        "num_drafts": num_requests * len(steps),
        "num_draft_tokens": num_requests * len(steps) * k,
        "num_accepted_tokens": num_requests * sum(accepted),
        "accepted_per_position": [num_requests * p for p in per_pos],
    }


@pytest.mark.parametrize("concurrency", [1, 8])
def test_acceptance_comes_exactly_from_counter_deltas_over_the_measured_window(concurrency):
    pattern, k, output_len, n = [3, 1, 5, 2], 4, 20, 8
    specs = synthetic_prompts(n, 8, output_len, seed=2)
    with running(
        "--ttft-ms",
        "20",
        "--itl-ms",
        "20",
        "--k",
        str(k),
        "--tokens-per-step",
        ",".join(map(str, pattern)),
    ) as url:
        r = run(url, specs, concurrency, warmup=3)
    exp = expected_counters(n, output_len, pattern, k)  # the 3 warm-up requests are excluded
    assert r["acceptance_source"] == "server-metrics"
    deltas = r["spec_decode_deltas"]
    assert deltas["num_drafts"] == exp["num_drafts"]
    assert deltas["num_draft_tokens"] == exp["num_draft_tokens"]
    assert deltas["num_accepted_tokens"] == exp["num_accepted_tokens"]
    assert list(deltas["accepted_per_position"]) == exp["accepted_per_position"]
    assert r["acceptance_rate"] == pytest.approx(
        exp["num_accepted_tokens"] / exp["num_draft_tokens"], rel=1e-12
    )
    assert r["mean_accepted_length"] == pytest.approx(
        1 + exp["num_accepted_tokens"] / exp["num_drafts"], rel=1e-12
    )
    assert r["acceptance_per_position"] == pytest.approx(
        [p / exp["num_drafts"] for p in exp["accepted_per_position"]], rel=1e-12
    )
    assert r["k_used"] == pytest.approx(exp["num_draft_tokens"] / exp["num_drafts"], rel=1e-12)


def test_acceptance_falls_back_to_a_labelled_chunk_estimate_without_counters():
    pattern, k, output_len = [3, 1, 5, 2], 4, 20
    specs = synthetic_prompts(4, 8, output_len, seed=3)
    with running(
        "--ttft-ms",
        "20",
        "--itl-ms",
        "20",
        "--k",
        str(k),
        "--no-spec-metrics",
        "--tokens-per-step",
        ",".join(map(str, pattern)),
    ) as url:
        r = run(url, specs, 2, num_speculative_tokens=k)
    steps = plan_chunks(output_len, pattern)[1:]
    tokens_per_step = sum(steps) / len(steps)
    assert r["acceptance_source"] == "estimate-from-chunks"
    assert r["spec_decode_deltas"] is None
    assert r["k_used"] is None  # only the counters tell the window; no estimate stands in
    assert r["mean_accepted_length"] == pytest.approx(tokens_per_step, rel=1e-12)
    assert r["acceptance_rate"] == pytest.approx((tokens_per_step - 1) / k, rel=1e-12)


def test_server_faults_are_counted_and_retried_within_bounds(tmp_path):
    prompts = [
        "fine one",
        "FAULT:500 always",
        "FAULT:500ONCE then fine",
        "fine two",
        "FAULT:DROP mid stream",
        "FAULT:TRUNCATE no done",
        "FAULT:SLOW past timeout",
        "FAULT:ERROREVENT in stream",
        "fine three",
    ]
    path = tmp_path / "faults.jsonl"
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    specs = load_dataset(path, len(prompts), 6, seed=0)
    with running("--ttft-ms", "20", "--itl-ms", "20", "--slow-s", "3") as url:
        r = run(url, specs, 4, warmup=0, timeout_s=0.6, max_retries=2)
    assert r["errors"] == {
        "total": 5,
        "dropped_stream": 2,
        "http_5xx": 1,
        "stream_error": 1,
        "timeout": 1,
    }
    assert r["completed"] == 4  # three fine prompts and the one that succeeded on retry
    assert r["retries"] == 3  # 2 for the persistent 500 (the bound), 1 for the transient one
    assert r["output_tokens"] == 4 * 6


def test_an_unreachable_endpoint_is_reported_as_connect_errors():
    specs = synthetic_prompts(3, 4, 4, seed=0)
    r = run("http://127.0.0.1:9", specs, 2, warmup=0, max_retries=1, timeout_s=2.0)
    assert r["errors"] == {"total": 3, "connect": 3}
    assert r["completed"] == 0 and r["retries"] == 3
    assert r["output_tokens_per_s"] == 0 and r["cost_per_1m_output_tokens_usd"] is None
    assert r["ttft_ms"]["p50"] is None


def test_chat_api_is_timed_like_completions():
    specs = synthetic_prompts(4, 8, 6, seed=4)
    with running("--ttft-ms", "40", "--itl-ms", "20", "--tokens-per-step", "1", "--k", "1") as url:
        r = run(url, specs, 2, api="chat")
        truth = actual(url, skip=2)  # the warm-up is one request per slot
    assert r["completed"] == 4 and r["usage_reported"]
    # against what the server did (a loaded host makes its 20 ms schedule late, never early);
    # a median of 20 gaps moves by a millisecond when a loaded host delays one read (seen with a
    # CI run beside the suite), so 2 ms are allowed as for TTFT: a chunk miscounted is 20 ms
    assert close(r["itl_ms"]["p50"], statistics.median(truth["itl"]) * 1000.0, abs_ms=2.0)
    assert min(truth["e2e"]) * 1000.0 >= 40.0 + 5 * 20.0 - 1.0  # 6 tokens, 1 per chunk
    assert r["output_tokens"] == 4 * 6


def test_tool_overhead_is_measured_and_reported(record_property, capsys):
    """A zero-delay server: TTFT is then the whole request path (client send, loopback, server,
    first event parsed), and the parse cost per event is what the tool adds to every ITL."""
    specs = synthetic_prompts(10, 8, 64, seed=5)
    with running("--ttft-ms", "0", "--itl-ms", "0", "--tokens-per-step", "1", "--k", "1") as url:
        r = run(url, specs, 1)
    overhead_us = r["tool_overhead_us_per_chunk"]
    record_property("tool_overhead_us_per_chunk", overhead_us)
    record_property("tool_cpu_us_per_output_token", r["tool_cpu_us_per_output_token"])
    record_property("zero_delay_ttft_p50_ms", r["ttft_ms"]["p50"])
    with capsys.disabled():
        print(
            f"\n[bench overhead] parse {overhead_us:.1f} us per event; zero-delay TTFT p50"
            f" {r['ttft_ms']['p50']:.2f} ms (request path floor); client CPU"
            f" {r['tool_cpu_us_per_output_token']:.0f} us per output token"
        )
    # Reported, not bounded: how fast the request path is depends on the machine and its load
    # (a wall-clock bound failed on a busy 2-core host); what is pinned is that it is measured.
    assert overhead_us > 0
    assert r["tool_cpu_us_per_output_token"] > 0
    assert r["ttft_ms"]["p50"] > 0
