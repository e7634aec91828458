"""Compatibility and topology rules: each bad field is refused with its value and a concrete fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trnspec.checks.all_checks import check
from trnspec.config.images import IMAGES, ImageGeneration, generations_supporting
from trnspec.config.serving import apply_overrides, load_profile

FORK = IMAGES[ImageGeneration.NEURON_FORK]
PLUGIN = IMAGES[ImageGeneration.NEURON_PLUGIN]


def problems_for(profile: str, *overrides: str) -> list[str]:
    return [str(p) for p in check(apply_overrides(load_profile(profile), list(overrides)))]


RULES = [
    # (spec name, profile, overrides, expected line fragment)
    (
        "tp_that_does_not_divide_cores",
        "qwen3-32b-draft",
        ["tensor_parallel_size=48"],
        "tensor_parallel_size=48: does not divide the 64 logical cores of trn2.48xlarge at LNC=2;"
        " use 32 or 64",
    ),
    (
        "tp_not_power_of_two_at_lnc1",
        "qwen3-32b-draft",
        ["hardware.lnc=1", "tensor_parallel_size=96"],
        "tensor_parallel_size=96: does not divide the 128 logical cores of trn2.48xlarge at LNC=1;"
        " use 64 or 128",
    ),
    (
        "tp_above_all_cores",
        "llama31-8b-eagle3",
        ["tensor_parallel_size=8"],
        "tensor_parallel_size=8: exceeds the 4 logical cores of trn2.3xlarge at LNC=2;"
        " use 4 or fewer",
    ),
    (
        "eagle3_on_the_fork_image",
        "qwen3-32b-draft",
        ["speculation.method=eagle3"],
        f"speculation.method=eagle3: image {FORK.uri} (neuron-fork) cannot run eagle3",
    ),
    (
        "eagle3_refusal_names_the_plugin_image",
        "qwen3-32b-draft",
        ["speculation.method=eagle3"],
        f"use image=neuron-plugin ({PLUGIN.uri})",
    ),
    (
        "draft_model_on_the_plugin_image",
        "llama31-8b-eagle3",
        ["speculation.method=draft_model"],
        f"speculation.method=draft_model: image {PLUGIN.uri} (neuron-plugin)"
        " cannot run draft_model",
    ),
    (
        "k_above_the_image_window",
        "qwen3-32b-draft",
        ["speculation.num_speculative_tokens=8"],
        "speculation.num_speculative_tokens=8: image neuron-fork supports k in 1..7; use 7 or less",
    ),
    (
        "speculation_without_a_draft",
        "qwen3-32b-baseline",
        ["speculation.method=draft_model"],
        "speculation.draft: method=draft_model needs a draft model",
    ),
    (
        "draft_with_another_vocabulary",
        "qwen3-32b-draft",
        ["speculation.draft.source=meta-llama/Llama-3.2-1B"],
        "draft vocabulary (128256 tokens) differs from the target's (151936)",
    ),
    (
        "draft_not_smaller_than_target",
        "llama31-70b-draft",
        ["speculation.draft.source=meta-llama/Llama-3.1-70B"],
        "is not smaller than the target",
    ),
    (
        "plain_model_as_eagle3_head",
        "llama31-8b-eagle3",
        ["speculation.draft.source=meta-llama/Llama-3.2-1B"],
        "method=eagle3 needs an EAGLE3 head",
    ),
    (
        "eagle3_head_as_draft_model",
        "qwen3-32b-draft",
        [
            "speculation.draft.source=yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
            "target.source=x/Llama-3.1-70B",
            "target.name=x",
        ],
        "this is an EAGLE3 head; set speculation.method=eagle3",
    ),
    (
        "dflash_on_the_fork_image",
        "qwen3-32b-draft",
        ["speculation.method=dflash"],
        f"speculation.method=dflash: image {FORK.uri} (neuron-fork) cannot run dflash",
    ),
    (
        "dflash_k_other_than_block_size_minus_one",
        "qwen3-4b-dflash",
        ["speculation.num_speculative_tokens=7"],
        "speculation.num_speculative_tokens=7: a DFlash drafter proposes exactly block_size - 1"
        " tokens and z-lab/Qwen3-4B-DFlash-b16 was trained with block_size=16; use 15",
    ),
    (
        "dflash_llama_drafter_window",
        "llama31-8b-dflash",
        ["speculation.num_speculative_tokens=15"],
        "was trained with block_size=10; use 9",
    ),
    (
        "dflash_outside_bf16",
        "llama31-8b-dflash",
        ["dtype=float16"],
        "dtype=float16: DFlash on the Neuron plugin is validated with BF16 target, draft and KV"
        " cache only (vllm-neuron features guide); use dtype=bfloat16",
    ),
    (
        "eagle3_head_as_dflash_drafter",
        "llama31-8b-dflash",
        ["speculation.draft.source=yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"],
        "method=dflash needs a DFlash drafter trained for the target, not an EAGLE3 head",
    ),
    (
        "unsorted_buckets",
        "qwen3-32b-draft",
        ["sequence_buckets=[4096, 1024, 8192]"],
        "sequence_buckets=[4096, 1024, 8192]: must be ascending without repeats;"
        " use [1024, 4096, 8192]",
    ),
    (
        "repeated_buckets",
        "qwen3-32b-draft",
        ["sequence_buckets=[1024, 1024, 8192]"],
        "must be ascending without repeats; use [1024, 8192]",
    ),
    (
        "bucket_beyond_max_model_len",
        "qwen3-32b-draft",
        ["sequence_buckets=[1024, 16384]"],
        "bucket 16384 exceeds max_model_len=8192; use [1024, 8192]",
    ),
    (
        "largest_bucket_short_of_max_model_len",
        "qwen3-32b-draft",
        ["sequence_buckets=[1024, 4096]"],
        "the largest bucket must equal max_model_len=8192",
    ),
    (
        "non_positive_bucket",
        "qwen3-32b-draft",
        ["sequence_buckets=[0, 8192]"],
        "buckets must be positive; use [8192]",
    ),
    (
        "buckets_on_an_image_that_picks_its_own",
        "llama31-8b-eagle3",
        ["sequence_buckets=[4096]"],
        "image neuron-plugin chooses its own buckets",
    ),
    (
        "batch_above_limit",
        "qwen3-32b-draft",
        ["max_num_seqs=512"],
        "max_num_seqs=512: use 256 or fewer",
    ),
    (
        "neuron_image_on_cpu",
        "qwen3-32b-draft",
        ["hardware.instance_type=cpu"],
        "hardware.instance_type=cpu: not a Trn2 instance type",
    ),
    (
        "unknown_instance_type",
        "qwen3-32b-draft",
        ["hardware.instance_type=p5.48xlarge"],
        "hardware.instance_type=p5.48xlarge: not a Trn2 instance type; use one of: trn2.48xlarge",
    ),
    (
        "cpu_image_on_trn2",
        "local-tiny",
        ["hardware.instance_type=trn2.48xlarge"],
        "image=cpu runs on the CPU engine; set hardware.instance_type=cpu",
    ),
    (
        "tp_on_cpu",
        "local-tiny",
        ["tensor_parallel_size=2"],
        "tensor_parallel_size=2: the CPU engine runs unsharded; use 1",
    ),
    (
        "options_shadowing_a_config_field",
        "qwen3-32b-draft",
        ["speculation.options={num_speculative_tokens: 3}"],
        "speculation.options.num_speculative_tokens=3: set by trnspec",
    ),
    (
        "model_that_does_not_fit_hbm",
        "llama31-70b-draft",
        ["tensor_parallel_size=4"],
        "tensor_parallel_size=4: needs",
    ),
    (
        "unknown_model_without_config_json",
        "qwen3-32b-draft",
        ["target.source=s3://bucket/models/mystery-model", "target.name=mystery"],
        "target.source=s3://bucket/models/mystery-model: model size unknown",
    ),
]


@pytest.mark.parametrize(
    ("profile", "overrides", "expected"),
    [r[1:] for r in RULES],
    ids=[f"config_rejects_{r[0]}" for r in RULES],
)
def test_rule(profile, overrides, expected):
    lines = problems_for(profile, *overrides)
    assert any(expected in line for line in lines), lines


def test_cpu_skips_trn2_topology_checks():
    assert problems_for("local-tiny", "hardware.lnc=1", "max_num_seqs=64") == []


def test_unknown_model_passes_when_the_hbm_check_is_explicitly_skipped():
    lines = problems_for(
        "qwen3-32b-draft",
        "target.source=s3://bkt/mystery",
        "target.name=m",
        "hardware.check_hbm=false",
    )
    assert lines == []


def test_baseline_ignores_draft_and_k():
    assert problems_for("qwen3-32b-baseline", "speculation.num_speculative_tokens=99") == []


def test_every_problem_names_field_value_and_fix():
    cfg = apply_overrides(
        load_profile("qwen3-32b-draft"),
        ["tensor_parallel_size=48", "speculation.method=eagle3", "sequence_buckets=[9, 3]"],
    )
    problems = check(cfg)
    assert len(problems) >= 3
    for p in problems:
        assert p.field and p.fix and str(p).startswith(f"{p.field}=")


def test_a_dflash_drafter_of_unknown_size_is_not_refused_for_sizing():
    """Published DFlash drafters are not in the shape table; the target is still sized."""
    assert problems_for("qwen3-4b-dflash") == []
    assert check(load_profile("qwen3-4b-dflash")) == []


def test_dflash_window_is_not_bounded_by_the_images_eagle3_window():
    assert load_profile("qwen3-4b-dflash").speculation.num_speculative_tokens > (
        PLUGIN.max_speculative_tokens
    )


def test_only_the_fork_image_is_legacy_and_warned_about():
    from trnspec.checks.all_checks import warnings

    for profile, legacy in (("qwen3-32b-draft", True), ("qwen3-4b-dflash", False)):
        found = warnings(load_profile(profile))
        assert bool(found) is legacy
    (warning,) = warnings(load_profile("qwen3-32b-draft"))
    assert warning.field == "image" and "Neuron SDK 2.28" in warning.fix


def test_a_local_dflash_config_json_sets_kind_and_window(tmp_path):
    d = tmp_path / "my-dflash"
    d.mkdir()
    config = {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 5,
        "hidden_size": 2560,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 9728,
        "vocab_size": 151936,
        "block_size": 8,
        "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33]},
    }
    (d / "config.json").write_text(json.dumps(config))
    lines = problems_for("qwen3-4b-dflash", f"speculation.draft.source={d}")
    assert lines == [
        "speculation.num_speculative_tokens=15: a DFlash drafter proposes exactly block_size - 1"
        f" tokens and {d} was trained with block_size=8; use 7"
    ]
    assert (
        problems_for(
            "qwen3-4b-dflash",
            f"speculation.draft.source={d}",
            "speculation.num_speculative_tokens=7",
        )
        == []
    )


@pytest.mark.parametrize("method", ["draft_model", "eagle3", "dflash", "none"])
def test_every_method_has_a_trn2_image(method):
    assert generations_supporting(method)[0].runs_on_trn2


# --- local model directories: config.json and tokenizer.json ---------------------------------


def _model_dir(
    root: Path, name: str, *, layers: int, hidden: int, vocab: int, tokens: dict
) -> Path:
    d = root / name
    d.mkdir()
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "intermediate_size": hidden * 3,
        "vocab_size": vocab,
        "tie_word_embeddings": True,
    }
    (d / "config.json").write_text(json.dumps(config))
    tokenizer = {
        "model": {"type": "BPE", "vocab": tokens},
        "added_tokens": [{"id": 0, "content": "<s>"}],
    }
    (d / "tokenizer.json").write_text(json.dumps(tokenizer))
    return d


def _local(
    tmp_path: Path, draft_tokens: dict, draft_vocab: int = 64, draft_hidden: int = 64
) -> list[str]:
    vocab = {f"t{i}": i for i in range(64)}
    target = _model_dir(tmp_path, "target", layers=4, hidden=256, vocab=64, tokens=vocab)
    draft = _model_dir(
        tmp_path, "draft", layers=1, hidden=draft_hidden, vocab=draft_vocab, tokens=draft_tokens
    )
    return problems_for(
        "local-tiny", f"target.source={target}", f"speculation.draft.source={draft}"
    )


def test_local_models_with_the_same_tokenizer_pass(tmp_path):
    assert _local(tmp_path, {f"t{i}": i for i in range(64)}) == []


def test_local_draft_with_a_different_tokenizer_is_refused(tmp_path):
    lines = _local(tmp_path, {f"u{i}": i for i in range(64)})
    assert any("tokenizer.json differs from the target's" in line for line in lines), lines


def test_local_draft_with_a_different_vocab_size_is_refused(tmp_path):
    lines = _local(tmp_path, {f"t{i}": i for i in range(64)}, draft_vocab=65)
    assert any("draft vocabulary (65 tokens) differs" in line for line in lines), lines


def test_local_draft_larger_than_target_is_refused(tmp_path):
    lines = _local(tmp_path, {f"t{i}": i for i in range(64)}, draft_hidden=512)
    assert any("is not smaller than the target" in line for line in lines), lines


def test_unreadable_local_config_json_is_a_problem_not_a_crash(tmp_path):
    d = tmp_path / "broken"
    d.mkdir()
    (d / "config.json").write_text("{not json")
    lines = problems_for("local-tiny", f"target.source={d}")
    assert any(line.startswith(f"target.source={d}") for line in lines), lines


@pytest.mark.parametrize(
    "config",
    [
        {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 0},
        {"num_hidden_layers": -1, "hidden_size": 64, "num_attention_heads": 4},
        ["not", "an", "object"],
        {"hidden_size": "wide"},
    ],
)
def test_nonsense_config_json_is_a_problem_on_the_source(tmp_path, config):
    d = tmp_path / "odd"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    lines = problems_for("local-tiny", f"target.source={d}")
    assert any(line.startswith(f"target.source={d}: ") for line in lines), lines


@pytest.mark.parametrize(
    "tokenizer", [[], {"model": []}, {"added_tokens": [1, 2]}, {"model": {"vocab": None}}]
)
def test_odd_tokenizer_json_does_not_crash_the_checks(tmp_path, tokenizer):
    vocab = {f"t{i}": i for i in range(64)}
    target = _model_dir(tmp_path, "target", layers=4, hidden=256, vocab=64, tokens=vocab)
    draft = _model_dir(tmp_path, "draft", layers=1, hidden=64, vocab=64, tokens=vocab)
    (draft / "tokenizer.json").write_text(json.dumps(tokenizer))
    lines = problems_for(
        "local-tiny", f"target.source={target}", f"speculation.draft.source={draft}"
    )
    assert all("tokenizer.json differs" not in line for line in lines)
