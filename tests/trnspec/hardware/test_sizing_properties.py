"""Properties of HBM sizing on any shape and batch: sharding loses no weights and keeps at least
one KV head per rank, the KV cache grows linearly with batch and sequence length (k draft tokens
included), headroom is a tenth of the HBM of the chips used, and a plan fits exactly when what
it needs is within that HBM."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.serving import apply_overrides, load_profile
from trnspec.hardware.model_shapes import KNOWN_SHAPES, ModelShape
from trnspec.hardware.sizing import (
    BYTES_PER_DTYPE,
    CPU_KVCACHE_GIB,
    GIB,
    HEADROOM_FRACTION,
    footprint,
    make_plan,
)

SETTINGS = settings(max_examples=100, deadline=None)
CFG = load_profile("qwen3-32b-draft")
TARGET, DRAFT = KNOWN_SHAPES["qwen3-32b"], KNOWN_SHAPES["qwen3-1.7b"]

shapes = st.builds(
    lambda layers, kv_heads, head_dim, hidden: dataclasses.replace(
        TARGET, layers=layers, kv_heads=kv_heads, head_dim=head_dim, hidden=hidden
    ),
    st.integers(1, 96),
    st.integers(1, 16),
    st.sampled_from([64, 128, 256]),
    st.sampled_from([1024, 4096, 8192]),
)
shards = st.sampled_from([1, 2, 4, 8, 16, 32, 64])


@SETTINGS
@given(shapes, shards, st.integers(1, 64), st.integers(1, 1 << 15))
def test_sharding_loses_no_weights_and_keeps_a_kv_head_per_rank(shape, n, seqs, tokens):
    cfg = apply_overrides(CFG, [f"max_num_seqs={seqs}"])
    f = footprint("target", shape, cfg, n, tokens)
    nbytes = BYTES_PER_DTYPE[cfg.dtype]
    assert f.weight_bytes == shape.params * nbytes
    assert f.weight_bytes <= f.weight_bytes_per_shard * n < f.weight_bytes + n
    assert f.kv_bytes == shape.kv_bytes_per_token(nbytes) * tokens * seqs
    one_head = shape.layers * shape.head_dim * 2 * nbytes * tokens * seqs
    assert f.kv_bytes_per_shard == one_head * math.ceil(shape.kv_heads / n)
    assert f.kv_bytes_per_shard * n >= f.kv_bytes  # replicated, never lost
    assert f.bytes_per_shard == f.weight_bytes_per_shard + f.kv_bytes_per_shard


@SETTINGS
@given(st.integers(1, 32), st.integers(1, 4), st.sampled_from([1024, 4096, 8192]))
def test_kv_grows_linearly_with_batch_and_counts_k_draft_tokens(seqs, factor, max_len):
    one = apply_overrides(CFG, [f"max_num_seqs={seqs}", f"max_model_len={max_len}"])
    more = apply_overrides(one, [f"max_num_seqs={seqs * factor}"])
    a, b = make_plan(one, TARGET, DRAFT), make_plan(more, TARGET, DRAFT)
    k = CFG.speculation.num_speculative_tokens
    assert a.tokens_per_sequence == max_len + k
    assert b.kv_bytes == factor * a.kv_bytes
    assert [f.role for f in a.footprints] == ["target", "draft"]


def test_without_a_draft_shape_there_is_no_draft_and_no_k():
    plan = make_plan(CFG, TARGET, None)
    assert [f.role for f in plan.footprints] == ["target"]
    assert plan.tokens_per_sequence == CFG.max_model_len


def test_a_baseline_given_a_draft_shape_still_plans_no_draft_and_no_k():
    baseline = load_profile("qwen3-32b-baseline")
    plan = make_plan(baseline, TARGET, DRAFT)
    assert [f.role for f in plan.footprints] == ["target"]
    assert plan.tokens_per_sequence == baseline.max_model_len


@SETTINGS
@given(st.sampled_from([4, 8, 16, 32, 64]), st.integers(1, 64))
def test_headroom_is_a_tenth_of_the_hbm_used_and_fit_is_need_within_hbm(tp, seqs):
    cfg = apply_overrides(CFG, [f"tensor_parallel_size={tp}", f"max_num_seqs={seqs}"])
    plan = make_plan(cfg, TARGET, DRAFT)
    assert plan.on_trn2 and plan.logical_cores_used == tp
    assert plan.headroom_bytes == math.ceil(plan.hbm_bytes * HEADROOM_FRACTION)
    assert plan.needed_bytes == plan.bytes_per_shard * tp + plan.headroom_bytes
    assert plan.fits == (plan.needed_bytes <= plan.hbm_bytes)
    assert math.isclose(plan.utilisation, plan.needed_bytes / plan.hbm_bytes)


def test_a_plan_that_needs_exactly_its_hbm_fits():
    plan = make_plan(CFG, TARGET, DRAFT)
    exact = dataclasses.replace(plan, hbm_bytes=plan.needed_bytes)
    assert exact.fits and exact.utilisation == 1.0
    assert not dataclasses.replace(plan, hbm_bytes=plan.needed_bytes - 1).fits


def test_the_draft_is_sharded_like_the_target_only_where_the_image_does_so():
    from trnspec.config.images import image_spec

    for profile in ("qwen3-32b-draft", "qwen3-4b-dflash"):
        cfg = load_profile(profile)
        plan = make_plan(cfg, TARGET, DRAFT)
        draft = plan.footprints[1]
        shards = cfg.tensor_parallel_size if image_spec(cfg.image).draft_at_target_tp else 1
        assert draft.weight_bytes_per_shard == math.ceil(draft.weight_bytes / shards)


def test_a_cpu_plan_has_no_hbm_and_fits_while_kv_is_within_the_cpu_space():
    cfg = load_profile("local-tiny")
    tiny = ModelShape("tiny", 2, 64, 4, 2, 16, 128, 1000, True)
    plan = make_plan(cfg, tiny, tiny)
    assert (plan.chips, plan.hbm_bytes, plan.headroom_bytes, plan.utilisation) == (0, 0, 0, 0.0)
    assert (plan.lnc, plan.tensor_parallel_size, plan.logical_cores_used) == (
        cfg.hardware.lnc,
        cfg.tensor_parallel_size,
        0,
    )
    assert plan.tokens_per_sequence == cfg.max_model_len + cfg.speculation.num_speculative_tokens
    target, draft = plan.footprints
    assert (target.shape, target.params) == (tiny, tiny.params)
    assert target.kv_bytes_per_token == tiny.kv_bytes_per_token(BYTES_PER_DTYPE[cfg.dtype])
    # the CPU engine runs the draft whole, on one shard, like everything else
    assert draft.weight_bytes_per_shard == draft.weight_bytes
    assert plan.fits == (plan.kv_bytes <= CPU_KVCACHE_GIB * GIB)
    assert plan.fits
    huge = dataclasses.replace(tiny, layers=10_000, kv_heads=64, head_dim=256)
    assert not make_plan(cfg, huge, None).fits
