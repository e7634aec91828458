"""The runner passes on what it is given: each flag to its own option, each deadline to its own
place, EOS and the arrival schedule to the requests, the loop's kind to the result."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fake_openai_server import running

from trnspec_tools.bench.bench import build_parser
from trnspec_tools.bench.run import RunOptions, deadlines, run_level, run_options_from_args
from trnspec_tools.bench.workload import arrival_offsets
from trnspec_tools.boundary.endpoint import BoundKey
from trnspec_tools.client.http_stream import Deadlines
from trnspec_tools.client.request_spec import RequestSpec


def test_each_shared_flag_lands_in_its_own_option(monkeypatch):
    """Every value distinct, so a flag read into another's field shows."""
    monkeypatch.setenv("TRNSPEC_API_KEY", "sekret")
    args = build_parser().parse_args(
        ["--endpoint", "http://127.0.0.1:8000", "--out", "x.json", "--api", "chat",
         "--warmup", "3", "--seed", "5", "--timeout", "31", "--connect-timeout", "7",
         "--first-byte-timeout", "13", "--max-retries", "4", "--retry-after-cap", "9"]
    )  # fmt: skip
    opts = run_options_from_args(args, request_rate=2.5)
    assert (opts.api, opts.warmup, opts.seed) == ("chat", 3, 5)
    assert (opts.timeout_s, opts.connect_timeout_s, opts.first_byte_timeout_s) == (31, 7, 13)
    assert (opts.max_retries, opts.retry_after_cap_s, opts.request_rate) == (4, 9, 2.5)
    assert isinstance(opts.api_key, BoundKey)
    assert opts.api_key.for_url("http://127.0.0.1:8000/v1/models") == "sekret"


def test_each_deadline_keeps_its_place_and_none_outlasts_the_whole_request():
    assert deadlines(RunOptions(connect_timeout_s=1, first_byte_timeout_s=2, timeout_s=3)) == (
        Deadlines(connect_s=1, first_byte_s=2, total_s=3)
    )
    assert deadlines(RunOptions(connect_timeout_s=9, first_byte_timeout_s=8, timeout_s=5)) == (
        Deadlines(connect_s=5, first_byte_s=5, total_s=5)
    )


def _records(url: str) -> list[dict]:
    return httpx.get(url + "/debug/timings").json()


@pytest.mark.parametrize(("ignore_eos", "sent"), [(True, True), (False, None)])
def test_requests_ask_the_server_to_ignore_eos_only_when_told(ignore_eos, sent):
    specs = [RequestSpec("a b c", 4)] * 2
    with running("--ttft-ms", "5", "--itl-ms", "5") as url:
        asyncio.run(run_level(url, "fake", specs, 1, RunOptions(warmup=0, ignore_eos=ignore_eos)))
        assert [r["ignore_eos"] for r in _records(url)] == [sent, sent]


def test_a_closed_loop_records_no_request_rate():
    specs = [RequestSpec("a b c", 4)] * 4
    with running("--ttft-ms", "5", "--itl-ms", "5") as url:
        level = asyncio.run(run_level(url, "fake", specs, 4, RunOptions(warmup=0)))
    assert level.request_rate is None


def test_an_open_loop_sends_each_request_at_its_seeded_poisson_time_and_records_the_rate():
    """Sleeping only delays: the arrivals span at least (half, for the host's jitter) what the
    seeded schedule spans; sent all at once they would span a few milliseconds."""
    rate, seed, n = 8.0, 3, 8
    offsets = arrival_offsets(n, rate, seed)
    assert offsets[-1] > 0.3  # the schedule this seed gives spans long enough to tell
    specs = [RequestSpec("a b c", 2)] * n
    opts = RunOptions(warmup=0, request_rate=rate, seed=seed)
    with running("--ttft-ms", "5", "--itl-ms", "5") as url:
        level = asyncio.run(run_level(url, "fake", specs, n, opts))
        arrivals = sorted(r["arrival"] for r in _records(url))
    assert level.request_rate == rate
    assert arrivals[-1] - arrivals[0] >= 0.5 * offsets[-1]
