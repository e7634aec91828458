"""HBM sizing plan: does target + draft (weights + KV cache + headroom) fit the cores it uses?

Pure arithmetic over the config, the model shapes and the Trn2 topology table, so a plan can be
checked on a laptop before any capacity is reserved. Per-shard numbers follow how NxD Inference
shards: weights split evenly over the TP ranks; KV heads split over ranks and replicated when TP
exceeds the KV head count (so each rank holds at least one KV head).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trnspec.config.images import image_spec
from trnspec.config.serving import ServingConfig
from trnspec.hardware.model_shapes import ModelShape
from trnspec.hardware.topology import HBM_GIB_PER_CHIP, instance

GIB = 1024**3
BYTES_PER_DTYPE = {"bfloat16": 2, "float16": 2, "float32": 4}
#: HBM kept free for the runtime, activations, compiled graphs (NEFFs) and collectives buffers.
HEADROOM_FRACTION = 0.10
#: KV cache the CPU engine is given (VLLM_CPU_KVCACHE_SPACE, GiB); render.py sets the same value.
CPU_KVCACHE_GIB = 1


@dataclass(frozen=True)
class ModelFootprint:
    """One model's memory at a given TP degree."""

    role: str  # "target" | "draft"
    shape: ModelShape
    params: int
    weight_bytes: int
    weight_bytes_per_shard: int
    kv_bytes_per_token: int
    #: The formula's logical KV cache: per-token bytes x (max_model_len + k) x max_num_seqs.
    kv_bytes: int
    #: What one TP rank holds (KV heads replicated when TP exceeds them).
    kv_bytes_per_shard: int

    @property
    def bytes_per_shard(self) -> int:
        return self.weight_bytes_per_shard + self.kv_bytes_per_shard


@dataclass(frozen=True)
class SizingPlan:
    """The numbers `trnspec plan` prints and the HBM check decides on."""

    instance_type: str
    lnc: int
    tensor_parallel_size: int
    chips: int
    logical_cores_used: int
    hbm_bytes: int
    footprints: tuple[ModelFootprint, ...]
    headroom_bytes: int
    tokens_per_sequence: int

    @property
    def on_trn2(self) -> bool:
        return self.instance_type != "cpu"

    @property
    def bytes_per_shard(self) -> int:
        return sum(f.bytes_per_shard for f in self.footprints)

    @property
    def needed_bytes(self) -> int:
        """All shards plus headroom: what the chips used must hold."""
        return self.bytes_per_shard * self.tensor_parallel_size + self.headroom_bytes

    @property
    def kv_bytes(self) -> int:
        """Logical KV cache of every model (what the CPU engine's KV space must hold)."""
        return sum(f.kv_bytes for f in self.footprints)

    @property
    def fits(self) -> bool:
        """Trn2: shards + headroom within the HBM of the chips used; CPU: KV within its space."""
        if self.on_trn2:
            return self.needed_bytes <= self.hbm_bytes
        return self.kv_bytes <= CPU_KVCACHE_GIB * GIB

    @property
    def utilisation(self) -> float:
        """Fraction of the HBM of the chips used (Trn2 only)."""
        return self.needed_bytes / self.hbm_bytes if self.hbm_bytes else 0.0


def footprint(
    role: str, shape: ModelShape, cfg: ServingConfig, shards: int, tokens_per_sequence: int
) -> ModelFootprint:
    """Weights and KV cache of one model sharded over `shards` ranks."""
    nbytes = BYTES_PER_DTYPE[cfg.dtype]
    params = shape.params
    weight_bytes = params * nbytes
    per_token = shape.kv_bytes_per_token(nbytes)
    kv_bytes = per_token * tokens_per_sequence * cfg.max_num_seqs
    kv_heads_per_shard = math.ceil(shape.kv_heads / shards)
    kv_per_shard = (
        (shape.layers * kv_heads_per_shard * shape.head_dim * 2 * nbytes)
        * tokens_per_sequence
        * cfg.max_num_seqs
    )
    return ModelFootprint(
        role=role,
        shape=shape,
        params=params,
        weight_bytes=weight_bytes,
        weight_bytes_per_shard=math.ceil(weight_bytes / shards),
        kv_bytes_per_token=per_token,
        kv_bytes=kv_bytes,
        kv_bytes_per_shard=kv_per_shard,
    )


def make_plan(
    cfg: ServingConfig, target: ModelShape, draft: ModelShape | None = None
) -> SizingPlan:
    """The sizing plan for `cfg`; the caller resolved the shapes (see model_shapes).

    The TP degree must already be valid for the instance (checked in trnspec.checks.compat).
    """
    speculating = cfg.speculation.method != "none" and draft is not None
    k = cfg.speculation.num_speculative_tokens if speculating else 0
    tokens = cfg.max_model_len + k
    tp = cfg.tensor_parallel_size
    spec = image_spec(cfg.image)
    footprints = [footprint("target", target, cfg, tp, tokens)]
    if speculating and draft is not None:
        draft_shards = tp if spec.draft_at_target_tp else 1
        footprints.append(footprint("draft", draft, cfg, draft_shards, tokens))

    if cfg.hardware.instance_type == "cpu" or not spec.runs_on_trn2:
        return SizingPlan(
            instance_type="cpu",
            lnc=cfg.hardware.lnc,
            tensor_parallel_size=tp,
            chips=0,
            logical_cores_used=0,
            hbm_bytes=0,
            footprints=tuple(footprints),
            headroom_bytes=0,
            tokens_per_sequence=tokens,
        )
    inst = instance(cfg.hardware.instance_type)
    chips = inst.chips_for(tp, cfg.hardware.lnc)
    hbm = chips * HBM_GIB_PER_CHIP * GIB
    return SizingPlan(
        instance_type=inst.name,
        lnc=cfg.hardware.lnc,
        tensor_parallel_size=tp,
        chips=chips,
        logical_cores_used=tp,
        hbm_bytes=hbm,
        footprints=tuple(footprints),
        headroom_bytes=math.ceil(hbm * HEADROOM_FRACTION),
        tokens_per_sequence=tokens,
    )
