"""The performance model's physics, pinned for any plausible constants (none frozen here)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from trnspec.hardware.model_shapes import KNOWN_SHAPES
from trnspec.perf.step_time import (
    REFERENCE_VCPUS,
    TRN2,
    Deployment,
    Efficiency,
    ModelInputError,
    alpha_from_tokens_per_step,
    best_k_per_batch,
    draft_cost_s,
    pass_cost,
    predict_grid,
    speculation_stops_paying,
    step_cost,
    tokens_per_step,
)

QWEN32 = KNOWN_SHAPES["qwen3-32b"]
QWEN17 = KNOWN_SHAPES["qwen3-1.7b"]
LLAMA70 = KNOWN_SHAPES["llama-3.1-70b"]
LLAMA8 = KNOWN_SHAPES["llama-3.1-8b"]
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=40)


def dep(tp: int = 64, context: int = 256) -> Deployment:
    return Deployment(TRN2, tp, 2, 2, 2, 2, context)


# Any constants a fit could plausibly produce: efficiencies from 0.5 % to 100 %, overheads up to
# 30 ms, hop latencies up to 20 us, per-position costs up to 1 ms.
efficiencies = st.builds(
    Efficiency,
    memory=st.floats(0.05, 1.0),
    compute=st.floats(0.005, 1.0),
    step_overhead_s=st.floats(0.0, 0.03),
    collective_latency_s=st.floats(0.0, 2e-5),
    token_overhead_s=st.floats(0.0, 1e-3),
)


@SETTINGS
@given(efficiencies)
def test_one_token_at_batch_one_is_bandwidth_bound(eff):
    # arithmetic intensity 1 FLOP/byte vs a machine balance of 667e12 / 2.9e12 = 230 FLOP/byte:
    # memory-bound unless compute efficiency is 230x worse than memory efficiency
    assume(eff.compute >= eff.memory / 200)
    for shape, tp in ((LLAMA70, 64), (LLAMA8, 4), (QWEN32, 64)):
        assert pass_cost(shape, 1, 1, dep(tp), eff, 2).bound == "memory"


def test_the_roofline_crossover_sits_at_the_machine_balance():
    """With equal efficiencies a pass turns compute-bound near 230 tokens (2 bytes per weight,
    2 FLOPs per weight per token): the ratio of Trn2's peak compute to its HBM bandwidth."""
    eff = Efficiency(memory=0.5, compute=0.5, step_overhead_s=0.0, collective_latency_s=0.0)
    bounds = {t: pass_cost(LLAMA70, t, 1, dep(context=0), eff, 2).bound for t in (1, 64, 2048)}
    assert bounds == {1: "memory", 64: "memory", 2048: "compute"}
    crossover = next(
        t
        for t in range(1, 4096)
        if pass_cost(LLAMA70, t, 1, dep(context=0), eff, 2).bound == "compute"
    )
    assert 180 <= crossover <= 280


@SETTINGS
@given(efficiencies)
def test_large_batch_verification_is_compute_bound(eff):
    assume(eff.compute <= eff.memory * 2)
    p = step_cost(QWEN32, "draft_model", QWEN17, 7, 256, dep(), eff)
    assert p.target.bound == "compute"


def test_at_batch_one_verifying_k_plus_one_tokens_costs_about_one():
    eff = Efficiency(memory=0.5, compute=0.5, step_overhead_s=0.005, collective_latency_s=2e-6)
    one = step_cost(LLAMA70, "none", None, 0, 1, dep(), eff).target.total_s
    eight = step_cost(LLAMA70, "none", None, 0, 1, dep(), eff, verify_tokens=8).target.total_s
    assert eight / one < 1.05


@SETTINGS
@given(efficiencies, st.floats(0.3, 0.95), st.integers(1, 7))
def test_speedup_falls_as_the_batch_grows(eff, alpha, k):
    """Non-increasing while plain decoding is still bandwidth-bound; once both are compute-bound
    it levels off near tau / (k + 1) (the draft's share shrinks), never back to batch 1's."""
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    points = predict_grid(QWEN32, "draft_model", QWEN17, alpha, [0, k], batches, dep(), eff)
    base = {p.batch: p for p in points if p.k == 0}
    spec = [p for p in points if p.k == k]
    memory_bound = [p.speedup for p in spec if base[p.batch].step.target.bound == "memory"]
    assert all(a >= b * (1 - 1e-9) for a, b in itertools.pairwise(memory_bound))
    assert spec[-1].speedup < spec[0].speedup


@SETTINGS
@given(efficiencies)
def test_speculation_stops_paying_at_some_batch(eff):
    """At short context; a long KV cache keeps verification bandwidth-bound (MagicDec)."""
    assume(eff.compute <= eff.memory * 2)
    batches = [1, 4, 16, 64, 256, 1024, 4096]
    points = predict_grid(QWEN32, "draft_model", QWEN17, 0.7, [0, 3, 7], batches, dep(), eff)
    stop = speculation_stops_paying(points)
    assert stop is not None
    best = best_k_per_batch(points)
    assert all(best[b].k == 0 for b in best if b >= stop)


@SETTINGS
@given(efficiencies)
def test_draft_model_cost_is_k_sequential_passes(eff):
    d = dep()
    one = draft_cost_s("draft_model", QWEN17, QWEN32, 1, 2, d, eff)
    assert draft_cost_s("draft_model", QWEN17, QWEN32, 6, 2, d, eff) == pytest.approx(6 * one)


@SETTINGS
@given(efficiencies)
def test_an_eagle3_head_drafts_cheaper_than_a_separate_draft_model(eff):
    d = dep()
    head = KNOWN_SHAPES["eagle3-llama3.1-instruct-8b"]
    small = KNOWN_SHAPES["llama-3.2-1b"]
    for k in (1, 3, 7):
        assert draft_cost_s("eagle3", head, LLAMA8, k, 1, d, eff) < draft_cost_s(
            "draft_model", small, LLAMA8, k, 1, d, eff
        )


@SETTINGS
@given(efficiencies)
def test_dflash_drafts_the_whole_block_in_one_pass(eff):
    """One parallel pass: at batch 1 a block of 16 costs far less than 15 sequential passes."""
    d = dep(tp=4)
    k1 = draft_cost_s("dflash", None, LLAMA8, 1, 1, d, eff)
    k15 = draft_cost_s("dflash", None, LLAMA8, 15, 1, d, eff)
    eagle = draft_cost_s("eagle3", None, LLAMA8, 15, 1, d, eff)
    assert k15 < 15 * k1
    assert k15 < eagle or eff.token_overhead_s > 0 or eff.compute < eff.memory / 20


def test_no_window_costs_no_draft_and_an_unknown_method_is_named():
    eff = Efficiency(0.5, 0.5, 0.0, 0.0)
    assert draft_cost_s("draft_model", QWEN17, QWEN32, 0, 1, dep(), eff) == 0.0
    with pytest.raises(ModelInputError, match=r"speculation\.method=medusa: "):
        draft_cost_s("medusa", None, QWEN32, 3, 1, dep(), eff)


@pytest.mark.parametrize(
    ("alpha", "k", "expected"),
    [(0.0, 5, 1.0), (0.5, 1, 1.5), (0.5, 2, 1.75), (1.0, 7, 8.0), (0.8, 0, 1.0)],
)
def test_tokens_per_step_is_the_geometric_sum(alpha, k, expected):
    assert tokens_per_step(alpha, k) == pytest.approx(expected)


@given(st.floats(0.0, 0.999), st.integers(1, 15))
def test_acceptance_length_and_rate_are_inverse(alpha, k):
    tau = tokens_per_step(alpha, k)
    assert tokens_per_step(alpha_from_tokens_per_step(tau, k), k) == pytest.approx(tau, rel=1e-6)


@pytest.mark.parametrize(("tau", "k"), [(0.9, 3), (4.5, 3), (2.0, 0)])
def test_impossible_acceptance_lengths_are_refused(tau, k):
    with pytest.raises(ModelInputError):
        alpha_from_tokens_per_step(tau, k)


def test_k_zero_speedup_is_one_and_throughput_counts_every_sequence():
    eff = Efficiency(0.5, 0.1, 0.005, 2e-6)
    points = predict_grid(QWEN32, "draft_model", QWEN17, 0.8, [0, 4], [1, 8], dep(), eff)
    zero = [p for p in points if p.k == 0]
    assert all(p.speedup == 1.0 for p in zero)
    b8 = next(p for p in zero if p.batch == 8)
    assert b8.output_tokens_per_s == pytest.approx(8 / b8.step.total_s)


def test_bad_efficiency_names_the_field():
    with pytest.raises(ModelInputError, match=r"efficiency\.compute=1\.5"):
        Efficiency(memory=0.5, compute=1.5, step_overhead_s=0.0, collective_latency_s=0.0)


SECONDS_FIELDS = [
    "step_overhead_s",
    "collective_latency_s",
    "draft_pass_overhead_s",
    "spec_overhead_s",
    "sequence_overhead_s",
    "token_overhead_s",
    "context_token_s",
    "logit_pair_s",
    "host_share_s",
]


def test_the_seconds_fields_are_every_cost_of_efficiency():
    names = [f.name for f in dataclasses.fields(Efficiency)]
    assert [n for n in names if n.endswith("_s")] == SECONDS_FIELDS


@pytest.mark.parametrize("name", SECONDS_FIELDS)
def test_a_negative_cost_names_the_field(name):
    base = Efficiency(memory=0.5, compute=0.5, step_overhead_s=0.0, collective_latency_s=0.0)
    with pytest.raises(ModelInputError, match=rf"efficiency\.{name}=-0\.001: must be >= 0"):
        dataclasses.replace(base, **{name: -0.001})


@pytest.mark.parametrize("memory", [0.0, 1.01])
def test_a_memory_efficiency_outside_0_1_names_the_field(memory):
    with pytest.raises(ModelInputError, match=r"efficiency\.memory=.*must lie in \(0, 1\]"):
        Efficiency(memory=memory, compute=0.5, step_overhead_s=0.0, collective_latency_s=0.0)


def test_the_speculation_overhead_is_paid_only_when_speculating():
    eff = Efficiency(0.5, 0.5, 0.004, 0.0, spec_overhead_s=0.003)
    plain = step_cost(QWEN32, "none", None, 0, 1, dep(), eff)
    k0 = step_cost(QWEN32, "draft_model", QWEN17, 0, 1, dep(), eff)
    k3 = step_cost(QWEN32, "draft_model", QWEN17, 3, 1, dep(), eff)
    assert plain.overhead_s == k0.overhead_s == pytest.approx(0.004)
    assert k3.overhead_s == pytest.approx(0.007)


def test_the_pair_term_grows_with_the_square_of_the_positions_and_the_vocabulary():
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, logit_pair_s=1e-10)
    one, four = (pass_cost(LLAMA8, t, 1, dep(4), eff, 2).pair_s for t in (10, 40))
    assert four == pytest.approx(16 * one)
    assert one == pytest.approx(100 * LLAMA8.vocab * 1e-10)


def test_the_context_term_is_paid_per_sequence_layer_and_cached_token():
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, context_token_s=1e-8)
    small = pass_cost(LLAMA70, 1, 1, dep(64, context=1000), eff, 2).context_s
    assert pass_cost(LLAMA70, 4, 4, dep(64, context=1000), eff, 2).context_s == pytest.approx(
        4 * small
    )
    assert pass_cost(LLAMA70, 1, 1, dep(64, context=4000), eff, 2).context_s == pytest.approx(
        4 * small
    )
    assert small == pytest.approx(LLAMA70.layers * 1000 * 1e-8)


# --- batch, TP and host: the terms the third pass separates ---------------------------------

per_sequence = st.floats(1e-5, 5e-3)


@SETTINGS
@given(per_sequence, st.integers(1, 64), st.floats(0.0, 0.03))
def test_each_sequence_added_to_the_batch_pays_its_own_host_cost(x, batch, floor):
    """One rank, no KV, memory-bound: the step grows by exactly the per-sequence cost."""
    eff = Efficiency(1.0, 1.0, floor, 0.0, sequence_overhead_s=x)
    d = dep(tp=1, context=0)
    one = step_cost(LLAMA8, "none", None, 0, 1, d, eff).total_s
    many = step_cost(LLAMA8, "none", None, 0, batch, d, eff).total_s
    assert many - one == pytest.approx((batch - 1) * x, rel=1e-9, abs=1e-12)


@SETTINGS
@given(efficiencies, per_sequence, st.floats(0.0, 2e-8), st.integers(3, 32))
def test_the_step_is_linear_in_the_live_batch_while_memory_bound(eff, x, ctx, batch):
    """Every per-sequence term (host, KV bytes, attention, collective bytes) is paid per
    sequence: step(b) = step(1) + (b - 1) x (step(2) - step(1))."""
    assume(eff.compute >= eff.memory / 2)  # 32 positions of an 8B model stay under the weights
    eff = dataclasses.replace(eff, sequence_overhead_s=x, context_token_s=ctx)
    d = dep(tp=8, context=2048)

    def step(b: int) -> float:
        return step_cost(LLAMA8, "none", None, 0, b, d, eff).total_s

    assert step(2) - step(1) >= x
    assert step(batch) - step(1) == pytest.approx((batch - 1) * (step(2) - step(1)), rel=1e-6)


@SETTINGS
@given(efficiencies, st.floats(1e-6, 2e-5))
def test_collectives_grow_with_the_tensor_parallel_degree(eff, hop):
    eff = dataclasses.replace(eff, collective_latency_s=hop)
    costs = [pass_cost(LLAMA70, 1, 1, dep(tp), eff, 2).collective_s for tp in (1, 2, 4, 8, 16, 64)]
    assert costs[0] == 0.0
    assert all(b > a for a, b in itertools.pairwise(costs))


@SETTINGS
@given(st.floats(1e-4, 0.03), st.floats(1.0, 192.0), st.floats(1.0, 192.0))
def test_a_replica_with_fewer_host_vcpus_never_steps_faster(host, v1, v2):
    eff = Efficiency(1.0, 1.0, 0.002, 0.0, host_share_s=host)
    lo, hi = sorted((v1, v2))
    few = step_cost(
        LLAMA8, "none", None, 0, 1, dataclasses.replace(dep(4), vcpus_per_replica=lo), eff
    )
    more = step_cost(
        LLAMA8, "none", None, 0, 1, dataclasses.replace(dep(4), vcpus_per_replica=hi), eff
    )
    assert few.total_s >= more.total_s
    assert few.host_s == pytest.approx(host * REFERENCE_VCPUS / lo)


@SETTINGS
@given(st.floats(1e-4, 0.05), st.floats(0.0, 0.03))
def test_async_scheduling_runs_the_host_share_beside_the_device_step(host, floor):
    """Overlapped: the longer of the two; synchronous: their sum. Never below either part."""
    sync = Efficiency(1.0, 1.0, floor, 0.0, host_share_s=host)
    overlapped = dataclasses.replace(sync, overlaps_host=True)
    d = dataclasses.replace(dep(4), vcpus_per_replica=REFERENCE_VCPUS)
    s = step_cost(LLAMA8, "none", None, 0, 1, d, sync)
    a = step_cost(LLAMA8, "none", None, 0, 1, d, overlapped)
    rest = s.total_s - s.host_s
    assert s.total_s == pytest.approx(host + rest)
    assert a.total_s == pytest.approx(max(host, rest))
    assert a.total_s <= s.total_s
