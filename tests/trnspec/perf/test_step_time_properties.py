"""The decode-step model's terms, each stated as the rule its docstring gives, on any shape,
TP group and constants: the HBM roofline streams the weights and the KV cache at the group's
share of the chips, the compute roofline counts 2 FLOPs per weight per position plus attention
over the context, collectives are two all-reduces per layer of ceil(log2 TP) hops plus the ring's
bytes, and the step, tokens and throughput arithmetic built on them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.boundary.problems import Problem
from trnspec.hardware.drafters import drafter_for
from trnspec.hardware.model_shapes import KNOWN_SHAPES
from trnspec.perf.step_time import (
    TRN2,
    Deployment,
    Efficiency,
    Hardware,
    ModelInputError,
    PassCost,
    Prediction,
    StepCost,
    alpha_from_tokens_per_step,
    best_k_per_batch,
    decode_context_tokens,
    draft_cost_s,
    pass_cost,
    predict_grid,
    predict_point,
    speculation_stops_paying,
    step_cost,
    tokens_per_step,
    weight_elements_read,
)

SETTINGS = settings(max_examples=60, deadline=None)
SHAPES = st.sampled_from(sorted(KNOWN_SHAPES))
TP = st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64])
IDEAL = Efficiency(memory=1.0, compute=1.0, step_overhead_s=0.0, collective_latency_s=0.0)
#: A chip whose links move any message at once: collectives cost their hop latencies alone.
INSTANT_LINKS = Hardware("test", 2.9e12, 667e12, math.inf, 8, "test")


def deployment(tp: int = 8, lnc: int = 2, context: int = 0, **kw: float) -> Deployment:
    return Deployment(TRN2, tp, lnc, 2, 2, 2, context, **kw)


def test_trn2_is_the_published_chip():
    """trainium2.rst / trn2-arch.rst: 2.9 TB/s HBM, 667 dense BF16 TFLOPS, 1,024 GB/s links
    within the instance, 8 physical NeuronCores per chip."""
    assert TRN2.memory_bytes_per_s == 2.9e12
    assert TRN2.peak_flops == 667e12
    assert TRN2.link_bytes_per_s == 1.024e12
    assert TRN2.cores_per_chip == 8


@given(TP, st.sampled_from([1, 2]))
def test_a_tp_group_uses_its_ranks_physical_cores_worth_of_chips(tp: int, lnc: int):
    assert TRN2.group_share(tp, lnc) == pytest.approx(tp * lnc / 8)


@given(SHAPES)
def test_a_pass_reads_every_weight_but_an_untied_input_embedding(name: str):
    shape = KNOWN_SHAPES[name]
    skipped = shape.vocab * shape.hidden if shape.kind == "decoder" else 0
    if shape.tied_embeddings:
        skipped = 0
    assert weight_elements_read(shape) == shape.params - skipped


@SETTINGS
@given(
    SHAPES,
    TP,
    st.sampled_from([1, 2]),
    st.integers(1, 64),
    st.integers(0, 32768),
    st.floats(0.05, 1.0),
    st.sampled_from([1.0, 2.0]),
)
def test_the_memory_term_streams_weights_and_kv_at_the_group_s_share_of_hbm(
    name: str, tp: int, lnc: int, batch: int, context: int, memory: float, weight_bytes: float
):
    shape = KNOWN_SHAPES[name]
    dep = Deployment(TRN2, tp, lnc, weight_bytes, weight_bytes, 2, context)
    eff = Efficiency(memory=memory, compute=1.0, step_overhead_s=0.0, collective_latency_s=0.0)
    kv_bytes = batch * context * shape.layers * shape.kv_heads * shape.head_dim * 2 * 2
    read = weight_elements_read(shape) * weight_bytes + kv_bytes
    hbm = 2.9e12 * (tp * lnc / 8) * memory
    assert pass_cost(shape, 1, batch, dep, eff, weight_bytes).memory_s == pytest.approx(read / hbm)


@SETTINGS
@given(SHAPES, TP, st.integers(1, 512), st.integers(0, 32768), st.floats(0.005, 1.0))
def test_the_compute_term_is_two_flops_per_weight_and_attention_over_the_context(
    name: str, tp: int, tokens: int, context: int, compute: float
):
    shape = KNOWN_SHAPES[name]
    eff = Efficiency(memory=1.0, compute=compute, step_overhead_s=0.0, collective_latency_s=0.0)
    attention = 4 * shape.layers * shape.heads * shape.head_dim * context
    flops = tokens * (2 * weight_elements_read(shape) + attention)
    peak = 667e12 * (tp * 2 / 8) * compute
    got = pass_cost(shape, tokens, 1, deployment(tp, context=context), eff, 2).compute_s
    assert got == pytest.approx(flops / peak)


@SETTINGS
@given(SHAPES, TP, st.integers(1, 64), st.floats(1e-7, 2e-5))
def test_collectives_are_two_all_reduces_per_layer_of_log2_tp_hops(
    name: str, tp: int, tokens: int, hop: float
):
    shape = KNOWN_SHAPES[name]
    dep = Deployment(INSTANT_LINKS, tp, 2, 2, 2, 2, 0)
    eff = Efficiency(memory=1.0, compute=1.0, step_overhead_s=0.0, collective_latency_s=hop)
    hops = math.ceil(math.log2(tp)) if tp > 1 else 0
    got = pass_cost(shape, tokens, 1, dep, eff, 2).collective_s
    assert got == pytest.approx(2 * shape.layers * hops * hop)


@SETTINGS
@given(SHAPES, TP, st.integers(1, 64), st.sampled_from([1, 2]))
def test_collectives_move_the_ring_s_share_of_the_bf16_activations_over_the_links(
    name: str, tp: int, tokens: int, lnc: int
):
    shape = KNOWN_SHAPES[name]
    message = tokens * shape.hidden * 2
    links = 1.024e12 * max(tp * lnc / 8, 1.0)
    ring = 2 * (tp - 1) / tp * message / links
    got = pass_cost(shape, tokens, 1, deployment(tp, lnc), IDEAL, 2).collective_s
    assert got == pytest.approx(2 * shape.layers * ring)


@given(st.integers(1, 512), st.floats(0.0, 1e-3))
def test_every_position_pays_its_logit_cost(tokens: int, per_position: float):
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, token_overhead_s=per_position)
    shape = KNOWN_SHAPES["llama-3.1-8b"]
    got = pass_cost(shape, tokens, 1, deployment(), eff, 2).token_s
    assert got == pytest.approx(tokens * per_position)


@pytest.mark.parametrize(("tokens", "batch"), [(0, 1), (1, 0), (-1, 5)])
def test_a_pass_without_positions_or_sequences_is_refused(tokens: int, batch: int):
    with pytest.raises(ModelInputError, match=rf"tokens/batch={tokens}/{batch}: both must be >= 1"):
        pass_cost(KNOWN_SHAPES["llama-3.1-8b"], tokens, batch, deployment(), IDEAL, 2)


terms = st.floats(0.0, 1.0)


@given(terms, terms, terms, terms, terms, terms)
def test_a_pass_takes_the_slower_roofline_plus_every_other_term(m, c, coll, tok, ctx, pair):
    p = PassCost(m, c, coll, tok, ctx, pair)
    assert p.total_s == pytest.approx(max(m, c) + coll + tok + ctx + pair)
    assert p.bound == ("compute" if c > m else "memory")


@given(terms, terms, terms, terms, st.booleans())
def test_a_step_adds_its_host_share_or_overlaps_it(overhead, target, draft, host, overlapped):
    step = StepCost(overhead, PassCost(target, 0.0, 0.0), draft, host, overlapped)
    device = overhead + target + draft
    assert step.total_s == pytest.approx(max(host, device) if overlapped else host + device)


@SETTINGS
@given(st.integers(1, 64), st.floats(0.0, 0.02), st.floats(0.0, 0.01), st.floats(1.0, 192.0))
def test_the_step_overhead_is_fixed_plus_per_sequence_and_the_host_share_scales_with_vcpus(
    batch: int, host: float, per_seq: float, vcpus: float
):
    eff = Efficiency(1.0, 1.0, 0.004, 0.0, sequence_overhead_s=per_seq, host_share_s=host)
    dep = deployment(vcpus_per_replica=vcpus)
    step = step_cost(KNOWN_SHAPES["llama-3.1-8b"], "none", None, 0, batch, dep, eff)
    assert step.overhead_s == pytest.approx(0.004 + batch * per_seq)
    assert step.host_s == pytest.approx(host * 12 / vcpus)


@given(st.integers(1, 16), st.integers(1, 32))
def test_a_verify_override_sets_the_positions_each_sequence_verifies(verify: int, batch: int):
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, token_overhead_s=1e-6)
    shape = KNOWN_SHAPES["llama-3.1-8b"]
    step = step_cost(shape, "none", None, 0, batch, deployment(), eff, verify_tokens=verify)
    assert step.target.token_s == pytest.approx(batch * verify * 1e-6)


@given(st.integers(1, 15), st.integers(1, 16), st.floats(0.0, 0.01))
def test_a_draft_model_pays_its_pass_overhead_per_pass_and_dflash_once(
    k: int, batch: int, per_pass: float
):
    target = KNOWN_SHAPES["llama-3.1-8b"]
    draft = KNOWN_SHAPES["llama-3.2-1b"]
    with_overhead = Efficiency(1.0, 1.0, 0.0, 0.0, draft_pass_overhead_s=per_pass)
    dep = deployment()
    for method, passes in (("draft_model", k), ("eagle3", k), ("dflash", 1)):
        d = draft if method == "draft_model" else None
        bare = draft_cost_s(method, d, target, k, batch, dep, IDEAL)
        paid = draft_cost_s(method, d, target, k, batch, dep, with_overhead)
        assert paid - bare == pytest.approx(passes * per_pass), method


def test_a_draft_model_without_a_draft_shape_is_refused_by_name():
    message = r"^speculation\.draft: a draft_model method needs a draft shape$"
    with pytest.raises(ModelInputError, match=message):
        draft_cost_s("draft_model", None, KNOWN_SHAPES["llama-3.1-8b"], 3, 1, deployment(), IDEAL)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("tensor_parallel_size=0", {"tp": 0}),
        ("context_tokens=-1", {"context": -1}),
        ("vcpus_per_replica=0.0", {"vcpus_per_replica": 0.0}),
    ],
)
def test_an_impossible_deployment_names_the_field(field: str, kwargs: dict):
    with pytest.raises(ModelInputError, match=rf"^{field}: must be"):
        deployment(**kwargs)


@pytest.mark.parametrize(
    ("alpha", "k", "problem"),
    [
        (0.5, -1, Problem("k", -1, "the window must be >= 0")),
        (-0.1, 3, Problem("acceptance rate", -0.1, "must lie in [0, 1]")),
        (1.1, 3, Problem("acceptance rate", 1.1, "must lie in [0, 1]")),
    ],
)
def test_an_impossible_window_or_rate_is_one_problem_naming_it(alpha: float, k: int, problem):
    with pytest.raises(ModelInputError) as err:
        tokens_per_step(alpha, k)
    assert err.value.problems == [problem]


@pytest.mark.parametrize(
    ("field", "value", "fix"),
    [
        ("memory", 0.0, "must lie in (0, 1]"),
        ("compute", 1.5, "must lie in (0, 1]"),
        ("step_overhead_s", -1e-6, "must be >= 0"),
    ],
)
def test_an_efficiency_outside_its_range_is_one_problem_naming_the_constant(field, value, fix):
    constants = {"memory": 1.0, "compute": 1.0, "step_overhead_s": 0.0, "collective_latency_s": 0.0}
    with pytest.raises(ModelInputError) as err:
        Efficiency(**{**constants, field: value})
    assert err.value.problems == [Problem(f"efficiency.{field}", value, fix)]


def test_an_acceptance_length_needs_a_window():
    with pytest.raises(ModelInputError, match=r"k=0: an acceptance length needs a window k >= 1"):
        alpha_from_tokens_per_step(1.0, 0)


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_the_mean_decode_context_is_the_prompt_plus_half_the_output(prompt: int, output: int):
    assert decode_context_tokens(prompt, output) == prompt + output // 2


def test_a_batch_without_sequences_is_refused_by_its_flag():
    with pytest.raises(ModelInputError, match=r"--batch=0: a batch holds at least one sequence"):
        predict_point(KNOWN_SHAPES["llama-3.1-8b"], "none", None, 0.7, 0, 0, deployment(), IDEAL)


@given(st.integers(1, 32), st.floats(1.0, 5.0))
def test_plain_decoding_emits_one_token_per_step_whatever_the_acceptance(batch: int, tau: float):
    p = predict_point(
        KNOWN_SHAPES["llama-3.1-8b"], "eagle3", None, lambda _k: tau, 0, batch, deployment(), IDEAL
    )
    assert p.tokens_per_step == 1.0
    assert p.tpot_s == pytest.approx(p.step.total_s)
    assert p.output_tokens_per_s == pytest.approx(batch / p.step.total_s)


@given(st.floats(0.01, 1.0), st.floats(1.0, 8.0), st.integers(1, 64))
def test_time_per_output_token_is_the_step_over_its_tokens(step_s: float, tau: float, batch: int):
    p = Prediction(batch, 3, tau, StepCost(step_s, PassCost(0.0, 0.0, 0.0), 0.0))
    assert p.tpot_s == pytest.approx(step_s / tau)
    assert p.output_tokens_per_s == pytest.approx(batch * tau / step_s)


def _point(batch: int, k: int, tokens_per_s: float) -> Prediction:
    """A prediction emitting `tokens_per_s` at `batch` (one token per step)."""
    return Prediction(batch, k, 1.0, StepCost(batch / tokens_per_s, PassCost(0.0, 0.0, 0.0), 0.0))


def test_the_best_k_is_the_fastest_and_a_tie_goes_to_the_smaller_k():
    points = [_point(1, 4, 200.0), _point(1, 0, 100.0), _point(1, 2, 200.0), _point(8, 0, 50.0)]
    best = best_k_per_batch(points)
    assert (best[1].k, best[8].k) == (2, 0)
    within_rounding = [_point(1, 0, 100.0), _point(1, 3, 100.0 * (1 + 1e-12))]
    assert best_k_per_batch(within_rounding)[1].k == 0


def test_speculation_stops_paying_at_the_first_batch_whose_best_k_is_zero():
    points = [
        *(_point(1, k, t) for k, t in ((0, 100.0), (3, 180.0))),
        *(_point(8, k, t) for k, t in ((0, 600.0), (3, 650.0))),
        *(_point(32, k, t) for k, t in ((0, 2000.0), (3, 1500.0))),
        *(_point(64, k, t) for k, t in ((0, 3000.0), (3, 2000.0))),
    ]
    assert speculation_stops_paying(points) == 32
    assert speculation_stops_paying(points[:4]) is None
    assert speculation_stops_paying([p for p in points if p.k == 0]) is None


def test_the_plain_point_of_a_grid_runs_on_the_plain_stack_when_one_is_given():
    shape, dep = KNOWN_SHAPES["llama-3.1-8b"], deployment()
    slow = Efficiency(0.5, 0.5, 0.010, 0.0)
    fast = Efficiency(0.5, 0.5, 0.002, 0.0)
    points = predict_grid(shape, "eagle3", None, 0.7, [0, 3], [1], dep, slow, plain_eff=fast)
    plain, spec = sorted(points, key=lambda p: p.k)
    assert plain.step == step_cost(shape, "none", None, 0, 1, dep, fast)
    assert spec.step == step_cost(shape, "eagle3", None, 3, 1, dep, slow)
    assert spec.speedup == pytest.approx(spec.output_tokens_per_s / plain.output_tokens_per_s)


def test_an_unknown_method_is_refused_with_the_methods_the_model_costs():
    with pytest.raises(ModelInputError, match=r"costs draft_model, eagle3, dflash \(or none\)"):
        draft_cost_s("medusa", None, KNOWN_SHAPES["llama-3.1-8b"], 3, 1, deployment(), IDEAL)


def test_a_negative_window_is_refused_by_name():
    with pytest.raises(ModelInputError, match=r"^k=-1: the window must be >= 0$"):
        step_cost(KNOWN_SHAPES["llama-3.1-8b"], "none", None, -1, 1, deployment(), IDEAL)


@given(st.integers(1, 15), st.integers(1, 16))
def test_dflash_drafts_in_one_pass_over_the_block_of_k_plus_one_positions(k: int, batch: int):
    target, dep = KNOWN_SHAPES["llama-3.1-8b"], deployment()
    drafter = drafter_for("dflash", None, target)
    assert drafter is not None
    one_pass = pass_cost(drafter, batch * (k + 1), batch, dep, IDEAL, dep.draft_weight_bytes)
    assert draft_cost_s("dflash", None, target, k, batch, dep, IDEAL) == one_pass.total_s


@pytest.mark.parametrize("method", ["draft_model", "eagle3", "dflash"])
def test_a_window_of_one_already_drafts_and_pays_the_speculation_overhead(method: str):
    target = KNOWN_SHAPES["llama-3.1-8b"]
    draft = KNOWN_SHAPES["llama-3.2-1b"] if method == "draft_model" else None
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, spec_overhead_s=0.003)
    step = step_cost(target, method, draft, 1, 1, deployment(), eff)
    assert step.draft_s == draft_cost_s(method, draft, target, 1, 1, deployment(), eff) > 0
    assert step.overhead_s == pytest.approx(0.003)


@given(st.integers(1, 7))
def test_plain_decoding_verifying_several_positions_drafts_nothing(k: int):
    """ "none" with a window: a published "verify k + 1 tokens" step, with no drafter to run."""
    eff = Efficiency(1.0, 1.0, 0.0, 0.0, spec_overhead_s=0.003)
    step = step_cost(KNOWN_SHAPES["llama-3.1-8b"], "none", None, k, 1, deployment(), eff)
    assert (step.draft_s, step.overhead_s) == (0.0, 0.0)


@given(st.integers(1, 15), st.floats(0.0, 1.0))
def test_a_measured_acceptance_curve_gives_the_tokens_per_step_of_its_window(k: int, gain: float):
    curve = lambda window: 1.0 + gain * window  # noqa: E731
    p = predict_point(
        KNOWN_SHAPES["llama-3.1-8b"], "eagle3", None, curve, k, 1, deployment(), IDEAL
    )
    assert p.tokens_per_step == pytest.approx(1.0 + gain * k)


@given(st.integers(1, 15))
def test_a_full_window_of_acceptance_is_a_rate_of_one(k: int):
    assert alpha_from_tokens_per_step(float(k + 1), k) == pytest.approx(1.0)


def test_an_acceptance_length_beyond_the_window_names_the_bound():
    with pytest.raises(
        ModelInputError, match=r"acceptance length=4\.5: must lie in \[1, k \+ 1 = 4\]"
    ):
        alpha_from_tokens_per_step(4.5, 3)


def test_a_window_of_one_is_speculation_too_when_finding_where_it_stops_paying():
    points = [_point(1, 0, 100.0), _point(1, 1, 150.0), _point(8, 0, 600.0), _point(8, 1, 500.0)]
    assert speculation_stops_paying(points) == 8
