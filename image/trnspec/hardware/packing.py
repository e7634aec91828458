"""How many serving replicas one Trn2 node holds: the one answer `predict`, `plan-deploy`, the
deploy's placement check (infra/platform/cluster/placement.py) and the scheduling simulation all
read.

A replica's requests (Neuron chips, vCPUs, memory, ephemeral storage) come from `pod_requests`,
which the serving manifests (infra/serving/manifests/spec.py) also call, so the figure priced is
the figure deployed. A node's allocatable is the EKS AL2023 kubelet's (nodeadm defaults; Karpenter
models the same node: kube-reserved CPU steps, 11 MiB per pod + 255 MiB and a 100 MiB eviction
threshold of memory, 7.5 % VM memory overhead, 1 GiB + 10 % of the node filesystem of storage). The
kubelet's filesystem is the instance-store NVMe (RAID0, set by the platform's node configuration)
where the instance table knows the instance store, else the root EBS volume. Replicas per node is
the smallest quotient over the resources, with the resource that limits it and why. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trnspec.hardware.topology import Lnc, instance

if TYPE_CHECKING:
    from trnspec.config.serving import ServingConfig

#: Share of a node's vCPUs and memory a pod may request per share of its chips: the rest stays
#: for kubelet reservations and the DaemonSets (device plugin, neuron-monitor, CNI, exporters).
NODE_SHARE = 0.9
#: The kubelet's node-filesystem reserve on the EKS AL2023 AMI: nodeadm sets kube-reserved
#: ephemeral-storage to 1Gi and the hard eviction threshold nodefs.available to 10%
#: (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go); Karpenter's allocatable model
#: subtracts the same two (aws/karpenter-provider-aws pkg/providers/instancetype/types.go).
KUBE_RESERVED_EPHEMERAL_GIB = 1
NODEFS_EVICTION_PERCENT = 10
#: Karpenter's default VMMemoryOverheadPercent (the booted node reports a little less memory than
#: the instance type's figure).
VM_MEMORY_OVERHEAD = 0.075
#: Pods the kubelet's memory reservation is computed for (the autoscalers' template figure).
NODE_PODS = 110
#: The platform's default root volume (infra Trn2PoolSettings.root_volume_gib).
DEFAULT_ROOT_VOLUME_GIB = 512
#: Staged-storage sizing: compiled Neuron graphs besides the weights, the share kept free, and the
#: rounding step of the request.
COMPILED_GRAPHS_GIB = 16
STORAGE_HEADROOM = 0.25
STORAGE_STEP_GIB = 8
MIN_STORAGE_GIB = 32
_GIB = 2**30


def ephemeral_storage_allocatable_gib(filesystem_gib: int) -> int:
    """Whole GiB of ephemeral storage the kubelet offers pods on a node whose kubelet filesystem
    has `filesystem_gib`: the size less kube-reserved and the nodefs eviction threshold.

    This is Karpenter's model of the same node (it takes the volume size as the filesystem
    size), so both autoscalers imagine the same figure. The real filesystem is a little smaller
    than the volume (partition table, EFI partition, XFS metadata), so a pod asking for nearly
    all of it may still fit the imagined node and not the real one: keep headroom.
    """
    usable_tenths = filesystem_gib * (100 - NODEFS_EVICTION_PERCENT) // 10
    return usable_tenths // 10 - KUBE_RESERVED_EPHEMERAL_GIB


def instance_store_gib(instance_type: str) -> int | None:
    """The instance store in whole GiB (RAID0 of every NVMe disk), None where not known."""
    gb = instance(instance_type).instance_store_gb
    return None if gb is None else gb * 10**9 // _GIB


def kubelet_disk(instance_type: str, root_volume_gib: int) -> tuple[int, str]:
    """Size (GiB) of the filesystem the kubelet's ephemeral storage lives on, and what it is."""
    store = instance_store_gib(instance_type)
    if store is not None:
        return store, f"instance-store NVMe (RAID0, {store} GiB)"
    return root_volume_gib, f"root EBS volume ({root_volume_gib} GiB)"


@dataclass(frozen=True)
class Resources:
    """Neuron chips, vCPUs, memory and ephemeral storage: a pod's requests or a node's
    allocatable (the names the scheduler compares)."""

    chips: int
    cpu: float
    memory_gib: float
    ephemeral_gib: float


def pod_requests(
    instance_type: str, tensor_parallel_size: int, lnc: Lnc, ephemeral_gib: int
) -> Resources:
    """What one serving replica asks for: its TP group's chips and the node's vCPUs and memory
    in proportion (NODE_SHARE of that share), plus `ephemeral_gib` of staged storage."""
    node = instance(instance_type)
    chips = node.chips_for(tensor_parallel_size, lnc)
    share = chips / node.chips
    return Resources(
        chips=chips,
        cpu=max(1, int(node.vcpus * share * NODE_SHARE)),
        memory_gib=max(1, int(node.memory_gib * share * NODE_SHARE)),
        ephemeral_gib=ephemeral_gib,
    )


def _kube_reserved_cpu(vcpus: int) -> float:
    """EKS kube-reserved CPU: 6 % of the first core, 1 % of the second, 0.5 % of cores 3-4,
    0.25 % above."""
    total, steps = 0.0, ((0, 1, 0.06), (1, 2, 0.01), (2, 4, 0.005), (4, 1 << 20, 0.0025))
    for start, end, pct in steps:
        if vcpus > start:
            total += (min(vcpus, end) - start) * pct
    return total


def node_allocatable(
    instance_type: str, root_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB
) -> Resources:
    """What the kubelet of a booted node offers pods (Karpenter's model of the same node)."""
    node = instance(instance_type)
    disk, _ = kubelet_disk(instance_type, root_volume_gib)
    reserved_mib = 11 * NODE_PODS + 255 + 100
    return Resources(
        chips=node.chips,
        cpu=node.vcpus - _kube_reserved_cpu(node.vcpus),
        memory_gib=node.memory_gib * (1 - VM_MEMORY_OVERHEAD) - reserved_mib / 1024,
        ephemeral_gib=ephemeral_storage_allocatable_gib(disk),
    )


_NAMES = {
    "chips": "aws.amazon.com/neuron",
    "cpu": "cpu",
    "memory_gib": "memory",
    "ephemeral_gib": "ephemeral-storage",
}


@dataclass(frozen=True)
class Packing:
    """Replicas one node holds, the resource that limits it and the figures behind that."""

    replicas: int
    limit: str
    reason: str


def replicas_per_node(pod: Resources, node: Resources) -> Packing:
    """The smallest quotient node / pod over the resources the pod asks for (0: it does not fit
    at all); ties name the first of chips, cpu, memory, ephemeral-storage."""
    best: Packing | None = None
    for field, name in _NAMES.items():
        ask, have = getattr(pod, field), getattr(node, field)
        if ask <= 0:
            continue
        fits = math.floor(have / ask + 1e-9)
        unit = " GiB" if field in ("memory_gib", "ephemeral_gib") else ""
        reason = f"{name}: {fits} x {ask:g}{unit} per replica within {have:.6g}{unit} allocatable"
        if best is None or fits < best.replicas:
            best = Packing(fits, name, reason)
    assert best is not None  # every replica asks for at least one chip
    return best


@dataclass(frozen=True)
class StagedStorage:
    """The ephemeral storage a replica stages: weights, compiled artifacts, headroom."""

    gib: int
    weights_gib: float
    source: str


def staged_storage_gib(cfg: ServingConfig) -> StagedStorage | None:
    """Storage one replica needs for what it stages, from the model shapes (params x dtype bytes
    of target and drafter): the weights, a pre-sharded copy of them plus the compiled graphs
    (COMPILED_GRAPHS_GIB) as the compile cache holds them, STORAGE_HEADROOM more, rounded up to
    STORAGE_STEP_GIB. None when the target's shape is unknown (set the size explicitly)."""
    from trnspec.hardware.drafters import drafter_for
    from trnspec.hardware.model_shapes import ShapeError, resolve_shape
    from trnspec.hardware.sizing import BYTES_PER_DTYPE

    try:
        target = resolve_shape(cfg.target)
        draft = resolve_shape(cfg.speculation.draft) if cfg.speculation.draft else None
    except ShapeError:
        return None
    if target is None:
        return None
    method = cfg.speculation.method
    drafter = drafter_for(method, draft, target) if method != "none" else None
    params = target.params + (drafter.params if drafter is not None else 0)
    weights = params * BYTES_PER_DTYPE[cfg.dtype] / _GIB
    need = (2 * weights + COMPILED_GRAPHS_GIB) * (1 + STORAGE_HEADROOM)
    gib = max(MIN_STORAGE_GIB, STORAGE_STEP_GIB * math.ceil(need / STORAGE_STEP_GIB))
    names = target.name + (f" + {drafter.name}" if drafter is not None else "")
    return StagedStorage(
        gib,
        weights,
        f"{names}: {weights:.1f} GiB of {cfg.dtype} weights, x2 with the compiled copy, "
        f"+{COMPILED_GRAPHS_GIB} GiB graphs, +{STORAGE_HEADROOM:.0%}",
    )


@dataclass(frozen=True)
class ReplicaPlacement:
    """A profile's replica on one node of its instance type: requests, node, packing."""

    pod: Resources
    node: Resources
    packing: Packing
    disk: str


def placement_for(
    cfg: ServingConfig,
    ephemeral_gib: int | None = None,
    root_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
) -> ReplicaPlacement | None:
    """How `cfg`'s replicas pack on a node of its instance type, with the storage the deploy
    requests (`ephemeral_gib`, else sized from the model); None when the storage is unknown."""
    if ephemeral_gib is None:
        staged = staged_storage_gib(cfg)
        if staged is None:
            return None
        ephemeral_gib = staged.gib
    itype = cfg.hardware.instance_type
    pod = pod_requests(itype, cfg.tensor_parallel_size, cfg.hardware.lnc, ephemeral_gib)
    node = node_allocatable(itype, root_volume_gib)
    _, disk = kubelet_disk(itype, root_volume_gib)
    return ReplicaPlacement(pod, node, replicas_per_node(pod, node), disk)
