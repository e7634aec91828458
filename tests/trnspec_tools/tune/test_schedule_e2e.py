"""End to end: the real vLLM CPU server runs a rendered `speculation.k_schedule`, and the bench
runner's `k_used` (draft tokens per draft, from the counters) shows the bands at work.

One server, max_num_seqs 4, bands [[1,1,4],[2,4,1]]: at concurrency 1 every step has batch 1, so
every draft is 4 tokens; at concurrency 4 most steps run batch 2-4 (k=1), only the ramp-up and
the tail run batch 1. Deselect with `-m "not e2e"`.
"""

from __future__ import annotations

import asyncio

import pytest
from server_pool import ServerPool

from trnspec_tools.bench.run import RunOptions, run_level
from trnspec_tools.bench.workload import select_workload
from trnspec_tools.local_engine.local_server import LocalServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def scheduled_server(local_servers: ServerPool) -> LocalServer:
    return local_servers.get(
        [
            "max_num_seqs=4",
            "speculation.num_speculative_tokens=4",
            "speculation.k_schedule=[[1,1,4],[2,4,1]]",
        ]
    )


def _k_used(server: LocalServer, concurrency: int) -> float | None:
    specs = select_workload("tiny-corpus", 16, 0, 32, seed=0)
    stats = asyncio.run(
        run_level(server.base_url, server.model, specs, concurrency, RunOptions(warmup=0))
    )
    assert stats.acceptance.acceptance_source == "server-metrics"
    return stats.k_used


def test_the_schedule_reaches_vllm_and_its_window_follows_the_batch(scheduled_server):
    assert _k_used(scheduled_server, 1) == pytest.approx(4.0)
    at_four = _k_used(scheduled_server, 4)
    assert at_four is not None and 1.0 <= at_four < 2.5
