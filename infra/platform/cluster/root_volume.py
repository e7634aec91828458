"""The root EBS volume of a Trn2 node, sized for what it holds.

Where the instance type has an instance store, nodeadm (managed node groups) or Karpenter's
`instanceStorePolicy: RAID0` builds a RAID0 of its NVMe disks and mounts the kubelet's state,
containerd's state (images, writable layers) and the pod logs on it (awslabs/amazon-eks-ami
nodeadm/doc/api.md, LocalStorageOptions: `/var/lib/containerd` and `/var/log/pods` are mounted
unless disabled; the kubelet's directory always). The root volume then holds the operating
system, the Neuron driver and tools of the AMI and the journal: a gp3 volume at its included
baseline (3,000 IOPS, 125 MiB/s) serves it. Without an instance store the root volume is the
kubelet's disk and carries multi-GB images, staged weights and compiled artifacts: large and
provisioned fast.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.hardware.packing import DEFAULT_ROOT_VOLUME_GIB, instance_store_gib

from infra.settings import Trn2PoolSettings

#: The operating system's volume next to an instance store. EKS's own default root volume is
#: 20 GiB for Linux (EKS CreateNodegroup API, `diskSize`); the Neuron AMI adds its driver, runtime
#: and tools, and the journal grows on a node that lives for weeks: 100 GiB leaves room for both.
#: Not measured on a node here.
OS_ROOT_GIB = 100
#: gp3's included performance (no charge above the GiB price).
GP3_BASELINE_IOPS = 3000
GP3_BASELINE_MIBPS = 125
#: The kubelet's disk without an instance store: provisioned for multi-GB image pulls and
#: artifact writes (gp3's maximum: 16,000 IOPS, 1,000 MiB/s).
KUBELET_DISK_IOPS = 16000
KUBELET_DISK_MIBPS = 1000


@dataclass(frozen=True)
class RootVolume:
    """gp3 root volume of a node: size and provisioned performance."""

    size_gib: int
    iops: int
    throughput_mibps: int
    holds: str
    """What it holds (for the docs and the report)."""


def root_volume(pool: Trn2PoolSettings) -> RootVolume:
    """The pool's root volume: `root_volume_gib` when set, else sized for what it holds; the
    performance follows what it holds."""
    if instance_store_gib(pool.instance_type) is not None:
        return RootVolume(
            size_gib=pool.root_volume_gib or OS_ROOT_GIB,
            iops=GP3_BASELINE_IOPS,
            throughput_mibps=GP3_BASELINE_MIBPS,
            holds="the operating system (kubelet, containerd and pod logs on the instance store)",
        )
    return RootVolume(
        size_gib=pool.root_volume_gib or DEFAULT_ROOT_VOLUME_GIB,
        iops=KUBELET_DISK_IOPS,
        throughput_mibps=KUBELET_DISK_MIBPS,
        holds="the kubelet's disk: images, staged weights, compiled artifacts",
    )
