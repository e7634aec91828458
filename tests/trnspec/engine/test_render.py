"""Rendering: the exact argv and env per image generation (golden snapshots per profile)."""

from __future__ import annotations

import json
import shlex

import pytest
from trnspec.config.images import IMAGES, ImageGeneration
from trnspec.config.serving import apply_overrides, list_profiles, load_profile
from trnspec.engine.render import (
    COMPILED_ROOT,
    MODELS_ROOT,
    PLAIN_ON_DEVICE_SAMPLING,
    local_model_dir,
    render,
)


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("profile", list_profiles())
def test_render_output_matches_golden(profile, snapshot):
    assert render(load_profile(profile)).to_json() == snapshot


def test_fork_renders_awss_fused_speculation_command_with_buckets():
    """NxD Inference sd-inference-tutorial.rst and aws-neuron-eks-samples qwen-sd-vllm-deploy.yaml:
    "method": "eagle" for the plain Qwen3 draft, save_sharded_checkpoint, no --block-size."""
    cmd = render(load_profile("qwen3-32b-draft"))
    assert cmd.image == IMAGES[ImageGeneration.NEURON_FORK].uri
    assert cmd.argv[:3] == ["vllm", "serve", "Qwen/Qwen3-32B"]
    assert json.loads(flag(cmd.argv, "--speculative-config")) == {
        "method": "eagle",
        "model": "Qwen/Qwen3-1.7B",
        "num_speculative_tokens": 7,
        "max_model_len": 8192,
    }
    neuron = json.loads(flag(cmd.argv, "--override-neuron-config"))
    assert neuron["save_sharded_checkpoint"] is True
    assert neuron["enable_fused_speculation"] is True
    assert neuron["context_encoding_buckets"] == [1024, 2048, 4096, 8192]
    assert neuron["token_generation_buckets"] == [1024, 2048, 4096, 8192]
    assert flag(cmd.argv, "--tensor-parallel-size") == "64"
    assert "--block-size" not in cmd.argv
    assert cmd.env == {
        "VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference",
        "NEURON_COMPILED_ARTIFACTS": COMPILED_ROOT,
        "NEURON_LOGICAL_NC_CONFIG": "2",
        "VLLM_USE_V1": "0",
    }


def test_fork_baseline_has_no_speculation_flags_but_keeps_the_sharded_checkpoint():
    cmd = render(load_profile("qwen3-32b-baseline"))
    assert "--speculative-config" not in cmd.argv
    neuron = json.loads(flag(cmd.argv, "--override-neuron-config"))
    assert "enable_fused_speculation" not in neuron
    assert neuron["save_sharded_checkpoint"] is True


@pytest.mark.parametrize("lnc", [1, 2])
def test_lnc_reaches_compiler_and_runtime_through_one_variable(lnc):
    for profile in ("qwen3-32b-draft", "qwen3-4b-dflash"):
        cfg = apply_overrides(load_profile(profile), [f"hardware.lnc={lnc}"])
        env = render(cfg).env
        assert env["NEURON_LOGICAL_NC_CONFIG"] == str(lnc)
        assert "NEURON_RT_VIRTUAL_CORE_SIZE" not in env


def test_plugin_renders_eagle3_as_the_tutorial_command_with_its_compile_cache_env():
    """vllm-neuron tutorial-eagle3-speculative-decoding-llama-3-1.md: --no-enable-prefix-caching
    and the speculative config, no --additional-config (so no greedy-only on-device sampling)."""
    cmd = render(load_profile("llama31-8b-eagle3"), remote_cache="/mnt/fsx/neuron-cache")
    assert cmd.image == IMAGES[ImageGeneration.NEURON_PLUGIN].uri
    assert json.loads(flag(cmd.argv, "--speculative-config")) == {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_speculative_tokens": 3,
    }
    assert "--additional-config" not in cmd.argv
    assert "--no-enable-prefix-caching" in cmd.argv
    assert "--override-neuron-config" not in cmd.argv
    assert cmd.env["VLLM_CACHE_ROOT"] == COMPILED_ROOT
    assert cmd.env["NEURON_LIBTORCH_REMOTE_CACHE"] == "/mnt/fsx/neuron-cache"


def test_plugin_renders_dflash_as_awss_run_tp4_script():
    """vllm-neuron examples/vllm_neuron/models/llama3/dflash/run_tp4.sh, flag by flag."""
    cmd = render(load_profile("llama31-8b-dflash"))
    assert json.loads(flag(cmd.argv, "--speculative-config")) == {
        "method": "dflash",
        "model": "z-lab/LLaMA3.1-8B-Instruct-DFlash-UltraChat",
        "num_speculative_tokens": 9,
    }
    for switch in (
        "--no-async-scheduling",
        "--no-enable-chunked-prefill",
        "--no-enable-prefix-caching",
        "--disable-hybrid-kv-cache-manager",
    ):
        assert switch in cmd.argv
    assert flag(cmd.argv, "--max-num-batched-tokens") == "8192"
    assert flag(cmd.argv, "--num-gpu-blocks-override") == "1200"  # 8192 * 4 / 32 + 176
    assert json.loads(flag(cmd.argv, "--additional-config")) == {
        "neuron_config": {"quantization": "bf16"}
    }


#: What each shipped plugin profile passes beyond the common flags, as AWS's command for its
#: method does (docs/workload.md, "Commands"): DFlash as run_tp4.sh, EAGLE3 as the tutorial.
PLUGIN_METHOD_FLAGS: dict[str, tuple[list[str], dict | None]] = {
    "qwen3-4b-dflash": (
        [
            *("--max-num-batched-tokens", "8192", "--num-gpu-blocks-override", "1200"),
            *("--no-async-scheduling", "--no-enable-chunked-prefill"),
            *("--no-enable-prefix-caching", "--disable-hybrid-kv-cache-manager"),
        ],
        {"neuron_config": {"quantization": "bf16"}},
    ),
    "qwen3-4b-dflash-3xl": (
        [
            *("--max-num-batched-tokens", "8192", "--num-gpu-blocks-override", "1200"),
            *("--no-async-scheduling", "--no-enable-chunked-prefill"),
            *("--no-enable-prefix-caching", "--disable-hybrid-kv-cache-manager"),
        ],
        {"neuron_config": {"quantization": "bf16"}},
    ),
    "llama31-8b-dflash": (
        [
            *("--max-num-batched-tokens", "8192", "--num-gpu-blocks-override", "1200"),
            *("--no-async-scheduling", "--no-enable-chunked-prefill"),
            *("--no-enable-prefix-caching", "--disable-hybrid-kv-cache-manager"),
        ],
        {"neuron_config": {"quantization": "bf16"}},
    ),
    "llama31-8b-eagle3": (["--no-enable-prefix-caching"], None),
    # Not AWS's: the tutorial's baseline passes nothing; on-device sampling is named here so
    # that async scheduling does not hang on a default AWS documents two ways.
    "qwen3-4b-baseline": (
        [],
        {"neuron_config": {"on_device_sampling_config": {"all_greedy": False}}},
    ),
}


def _plugin_profiles() -> list[str]:
    return [
        name
        for name in list_profiles()
        if load_profile(name).image is ImageGeneration.NEURON_PLUGIN
    ]


def test_every_plugin_profile_has_its_awss_command_pinned():
    assert sorted(_plugin_profiles()) == sorted(PLUGIN_METHOD_FLAGS)


@pytest.mark.parametrize("profile", sorted(PLUGIN_METHOD_FLAGS))
def test_plugin_profile_passes_exactly_awss_method_flags_and_additional_config(profile):
    cfg = load_profile(profile)
    argv = render(cfg).argv
    expected_flags, expected_additional = PLUGIN_METHOD_FLAGS[profile]
    after_common = argv[argv.index("--dtype") + 2 :]
    json_flags = [a for a in ("--speculative-config", "--additional-config") if a in after_common]
    end = min((after_common.index(a) for a in json_flags), default=len(after_common))
    assert after_common[:end] == expected_flags
    if expected_additional is None:
        assert "--additional-config" not in argv
    else:
        assert json.loads(flag(argv, "--additional-config")) == expected_additional


@pytest.mark.parametrize("profile", sorted(PLUGIN_METHOD_FLAGS))
def test_plugin_profile_env_is_awss_script_env_plus_cache_and_lnc(profile):
    cfg = load_profile(profile)
    assert render(cfg).env == {
        "NEURON_SKIP_EFA_AFFINITY": "1",
        "VLLM_NEURON_COMPILATION_TIMEOUT": "3600",
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3600",
        "VLLM_CACHE_ROOT": COMPILED_ROOT,
        "NEURON_LOGICAL_NC_CONFIG": str(cfg.hardware.lnc),
    }


@pytest.mark.parametrize(
    ("max_model_len", "max_num_seqs", "blocks"),
    [(8192, 4, 1200), (8192, 1, 432), (4096, 2, 432), (2048, 3, 368)],
)
def test_dflash_kv_blocks_follow_awss_script_formula(max_model_len, max_num_seqs, blocks):
    """run_tp4.sh: $(( (MAX_MODEL_LEN * MAX_NUM_SEQS) / BLOCK_SIZE + 176 )), BLOCK_SIZE=32."""
    cfg = apply_overrides(
        load_profile("qwen3-4b-dflash"),
        [f"max_model_len={max_model_len}", f"max_num_seqs={max_num_seqs}"],
    )
    assert flag(render(cfg).argv, "--num-gpu-blocks-override") == str(blocks)


def test_plugin_baseline_renders_no_speculation_flags():
    cmd = render(load_profile("qwen3-4b-baseline"))
    for name in ("--speculative-config", "--no-async-scheduling", "--no-enable-prefix-caching"):
        assert name not in cmd.argv


def _on_device_sampling(argv: list[str]) -> object:
    """The rendered on_device_sampling_config, or "absent" when the argv does not name it."""
    if "--additional-config" not in argv:
        return "absent"
    neuron = json.loads(flag(argv, "--additional-config")).get("neuron_config", {})
    return neuron.get("on_device_sampling_config", "absent")


@pytest.mark.parametrize("profile", sorted(PLUGIN_METHOD_FLAGS))
@pytest.mark.parametrize(
    "image", [ImageGeneration.NEURON_PLUGIN, ImageGeneration.NEURON_PLUGIN_SDK232]
)
def test_every_plain_plugin_pod_names_on_device_sampling_and_no_speculative_pod_does(
    profile, image
):
    """Async scheduling on the plugin requires on-device sampling, whose default AWS documents
    both as off ("null (CPU sampling)") and on: a plain pod (a baseline profile, or the plain arm
    a speculative profile turns into with method none) sets it on, with every sampling type
    (all_greedy false: requests keep their temperature). A speculative pod passes only what
    AWS's script for its method passes (speculation runs synchronously on the plugin)."""
    cfg = apply_overrides(load_profile(profile), [f"image={image.value}"])
    plain = apply_overrides(cfg, ["speculation.method=none"])
    plain_argv = render(plain).argv
    assert _on_device_sampling(plain_argv) == {"all_greedy": False} == PLAIN_ON_DEVICE_SAMPLING
    assert "--no-async-scheduling" not in plain_argv
    if cfg.speculation.method != "none":
        assert _on_device_sampling(render(cfg).argv) == "absent"


def test_plain_fork_and_cpu_renders_leave_sampling_to_their_engine():
    """On-device sampling is a vllm-neuron setting: the fork (NxD Inference, no async
    scheduling on V0) and the CPU engine render none."""
    for profile in ("qwen3-32b-baseline", "local-tiny"):
        cfg = apply_overrides(load_profile(profile), ["speculation.method=none"])
        assert "on_device_sampling_config" not in " ".join(render(cfg).argv)


def test_cpu_renders_the_api_server_module_with_contract_flags():
    cfg = apply_overrides(
        load_profile("local-tiny"),
        ["target.source=/abs/target", "speculation.draft.source=/abs/draft", "server.port=8123"],
    )
    cmd = render(cfg)
    assert cmd.argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    assert flag(cmd.argv, "--model") == "/abs/target"
    assert "--enforce-eager" in cmd.argv
    assert flag(cmd.argv, "--dtype") == "float32"
    assert (flag(cmd.argv, "--host"), flag(cmd.argv, "--port")) == ("127.0.0.1", "8123")
    assert flag(cmd.argv, "--served-model-name") == "tiny-target"
    assert json.loads(flag(cmd.argv, "--speculative-config")) == {
        "method": "draft_model",
        "model": "/abs/draft",
        "num_speculative_tokens": 4,
    }
    assert "VLLM_CACHE_ROOT" not in cmd.env
    assert int(cmd.env["VLLM_CPU_KVCACHE_SPACE"]) >= 1


def test_cpu_baseline_omits_the_speculative_config():
    cmd = render(apply_overrides(load_profile("local-tiny"), ["speculation.method=none"]))
    assert "--speculative-config" not in cmd.argv


def test_speculation_options_are_merged_into_the_speculative_config():
    cfg = apply_overrides(
        load_profile("local-tiny"), ["speculation.options={draft_tensor_parallel_size: 1}"]
    )
    spec = json.loads(flag(render(cfg).argv, "--speculative-config"))
    assert spec["draft_tensor_parallel_size"] == 1


def test_s3_sources_render_as_their_staged_local_copy():
    cfg = apply_overrides(
        load_profile("qwen3-32b-draft"),
        [
            "target.source=s3://models/qwen/Qwen3-32B/",
            "speculation.draft.source=s3://models/qwen/Qwen3-1.7B",
        ],
    )
    cmd = render(cfg, models_root="/data/models")
    assert cmd.argv[2] == "/data/models/models/qwen/Qwen3-32B"
    assert (
        json.loads(flag(cmd.argv, "--speculative-config"))["model"]
        == "/data/models/models/qwen/Qwen3-1.7B"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("s3://bucket/a/b/", f"{MODELS_ROOT}/bucket/a/b"),
        ("/abs/dir", "/abs/dir"),
        ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B"),
    ],
)
def test_local_model_dir(source, expected):
    from trnspec.config.serving import ModelRef

    assert local_model_dir(ModelRef(name="n", source=source)) == expected


def test_hub_revision_is_passed_on_and_local_revision_is_not():
    hub = render(apply_overrides(load_profile("qwen3-32b-draft"), ["target.revision=abc123"]))
    assert flag(hub.argv, "--revision") == "abc123"
    local = render(
        apply_overrides(load_profile("local-tiny"), ["target.source=/m", "target.revision=abc"])
    )
    assert "--revision" not in local.argv


@pytest.mark.parametrize("profile", list_profiles())
def test_shell_format_round_trips_to_env_and_argv(profile):
    cmd = render(load_profile(profile))
    words = shlex.split(cmd.to_shell())
    env_words = words[: len(cmd.env)]
    assert dict(w.split("=", 1) for w in env_words) == cmd.env
    assert words[len(cmd.env) :] == cmd.argv


def test_json_format_has_image_argv_env():
    assert set(json.loads(render(load_profile("qwen3-32b-draft")).to_json())) == {
        "image",
        "argv",
        "env",
    }
