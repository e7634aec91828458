"""Sizing: parameter counts from shapes, KV cache formula, HBM fit on the chips a TP group uses."""

from __future__ import annotations

import json

import pytest
from trnspec.boundary.problems import Problem
from trnspec.checks.all_checks import assess, check
from trnspec.config.serving import ModelRef, apply_overrides, load_profile
from trnspec.hardware.model_shapes import (
    KNOWN_SHAPES,
    ShapeError,
    resolve_shape,
    shape_from_config_json,
)
from trnspec.hardware.sizing import GIB, HEADROOM_FRACTION, make_plan


@pytest.mark.parametrize(
    ("model", "published_billions"),
    [
        ("Qwen3-32B", 32.8),
        ("Qwen3-8B", 8.2),
        ("Qwen3-1.7B", 1.7),
        ("Qwen3-0.6B", 0.6),
        ("Llama-3.1-70B", 70.6),
        ("Llama-3.1-8B", 8.0),
        ("Llama-3.2-1B", 1.24),
    ],
)
def test_params_computed_from_shape_match_the_published_size(model, published_billions):
    params = KNOWN_SHAPES[model.lower()].params / 1e9
    assert params == pytest.approx(published_billions, rel=0.03)


def test_eagle3_head_is_a_small_fraction_of_its_target():
    head = KNOWN_SHAPES["eagle3-llama3.1-instruct-8b"]
    assert head.kind == "eagle3"
    assert head.params < 0.1 * KNOWN_SHAPES["llama-3.1-8b"].params


@pytest.mark.parametrize(
    ("model", "kib_per_token"),
    [("Qwen3-32B", 256), ("Qwen3-1.7B", 112), ("Llama-3.1-70B", 320), ("Llama-3.2-1B", 32)],
)
def test_kv_bytes_per_token_is_layers_kvheads_headdim_two_bytes(model, kib_per_token):
    assert KNOWN_SHAPES[model.lower()].kv_bytes_per_token(2) == kib_per_token * 1024


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("s3://bucket/models/Qwen3-32B/", "q", "Qwen3-32B"),
        ("Qwen/Qwen3-1.7B", "q", "Qwen3-1.7B"),
        ("meta-llama/Llama-3.1-70B-Instruct", "m", "Llama-3.1-70B"),
        ("s3://bkt/whatever", "meta-llama/Llama-3.2-1B-Instruct", "Llama-3.2-1B"),
    ],
)
def test_known_models_resolve_from_source_or_served_name(source, name, expected):
    shape = resolve_shape(ModelRef(name=name, source=source))
    assert shape is not None and shape.name == expected


def test_local_config_json_wins_over_the_table(tmp_path):
    d = tmp_path / "Qwen3-32B"
    d.mkdir()
    (d / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "vocab_size": 100,
            }
        )
    )
    shape = resolve_shape(ModelRef(name="x", source=str(d)))
    assert shape is not None
    assert (shape.layers, shape.kv_heads, shape.head_dim) == (2, 4, 16)
    assert shape.origin.endswith("config.json")


def test_eagle3_config_json_is_recognised():
    shape = shape_from_config_json(
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "num_hidden_layers": 1,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 128256,
            "draft_vocab_size": 32000,
        },
        "test",
    )
    assert (shape.kind, shape.draft_vocab) == ("eagle3", 32000)


def test_qwen3_profile_fits_on_16_chips_and_reports_its_numbers():
    cfg = load_profile("qwen3-32b-draft")
    a = assess(cfg)
    plan = a.plan
    assert a.problems == () and plan is not None
    assert (plan.chips, plan.hbm_bytes) == (16, 16 * 96 * GIB)
    target, draft = plan.footprints
    # weights: params x 2 bytes (bf16), split over 64 shards
    assert target.weight_bytes == KNOWN_SHAPES["qwen3-32b"].params * 2
    assert target.weight_bytes_per_shard == -(-target.weight_bytes // 64)
    # KV: layers x KV heads x head dim x 2 x bytes x (max_model_len + k) x max_num_seqs
    assert target.kv_bytes == 64 * 8 * 128 * 2 * 2 * (8192 + 7) * 4
    assert draft.kv_bytes == 28 * 8 * 128 * 2 * 2 * (8192 + 7) * 4
    # TP=64 > 8 KV heads: every rank holds one replicated KV head
    assert target.kv_bytes_per_shard == 64 * 1 * 128 * 2 * 2 * (8192 + 7) * 4
    assert plan.headroom_bytes == pytest.approx(plan.hbm_bytes * HEADROOM_FRACTION, abs=1)
    assert (
        plan.needed_bytes
        == 64 * (target.bytes_per_shard + draft.bytes_per_shard) + plan.headroom_bytes
    )
    assert plan.fits and plan.needed_bytes < plan.hbm_bytes


@pytest.mark.parametrize(("tp", "chips"), [(4, 1), (8, 2), (16, 4), (32, 8), (64, 16)])
def test_chips_follow_tp_at_lnc2(tp, chips):
    cfg = apply_overrides(load_profile("qwen3-32b-draft"), [f"tensor_parallel_size={tp}"])
    plan = make_plan(cfg, KNOWN_SHAPES["qwen3-32b"], KNOWN_SHAPES["qwen3-1.7b"])
    assert plan.chips == chips


def test_baseline_plan_has_no_draft_and_no_k_tokens():
    plan = assess(load_profile("qwen3-32b-baseline")).plan
    assert plan is not None
    assert [f.role for f in plan.footprints] == ["target"]
    assert plan.tokens_per_sequence == 8192


def test_larger_batch_needs_more_memory_and_can_stop_fitting():
    small = assess(apply_overrides(load_profile("llama31-70b-draft"), ["tensor_parallel_size=8"]))
    big = assess(
        apply_overrides(
            load_profile("llama31-70b-draft"), ["tensor_parallel_size=8", "max_num_seqs=32"]
        )
    )
    assert small.plan and big.plan and big.plan.needed_bytes > small.plan.needed_bytes
    assert big.problems and big.problems[0].field == "tensor_parallel_size"


def test_fit_failure_suggests_the_smallest_tp_that_fits():
    a = assess(apply_overrides(load_profile("llama31-70b-draft"), ["tensor_parallel_size=4"]))
    assert any("use tensor_parallel_size=8" in p.fix for p in a.problems), a.problems
    fixed = assess(apply_overrides(load_profile("llama31-70b-draft"), ["tensor_parallel_size=8"]))
    assert fixed.problems == ()


def test_cpu_plan_checks_kv_against_the_cpu_kv_space(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(
        json.dumps(
            {
                "num_hidden_layers": 64,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "intermediate_size": 1,
                "vocab_size": 10,
            }
        )
    )
    cfg = apply_overrides(
        load_profile("local-tiny"),
        [f"target.source={d}", "speculation.method=none", "max_model_len=8192"],
    )
    a = assess(cfg)
    assert a.plan is not None and not a.plan.fits
    assert [p.field for p in a.problems] == ["max_model_len"]


def test_an_unreadable_local_config_json_is_named_with_its_path_under_the_source_field(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{not json")
    with pytest.raises(ShapeError) as err:
        resolve_shape(ModelRef(name="x", source=str(d)))
    (problem,) = err.value.problems
    assert (problem.field, problem.value) == ("config.json", str(d / "config.json"))
    assert err.value.reason == (
        f"{d / 'config.json'} is not a readable model config (not JSON: Expecting property name"
        " enclosed in double quotes at line 1, column 2)"
    )
    cfg = apply_overrides(load_profile("qwen3-4b-baseline"), [f"target.source={d}"])
    found = [p for p in check(cfg) if p.field == "target.source"]
    # one problem, with the cause: not also "model size unknown ... point the source at a local
    # directory with its config.json", which it already is
    assert found == [
        Problem("target.source", str(d), f"{err.value.reason}; fix or remove that file")
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"hidden_size": 64}', "no num_attention_heads field"),
        ("[1, 2]", "config.json must hold a JSON object"),
        ("", "not JSON: Expecting value at line 1, column 1"),
    ],
)
def test_an_unreadable_config_json_says_why_in_words(tmp_path, text, why):
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(ShapeError) as err:
        resolve_shape(ModelRef(name="x", source=str(tmp_path)))
    assert err.value.reason.endswith(f"is not a readable model config ({why})")
