"""Trainium2 instance topology: the one table both the serving engine and the CDK app read.

Kept as data with small pure helpers so sizing (HBM fit, TP degrees) and the Kubernetes resource
requests (how many `aws.amazon.com/neuron` devices a pod asks for) are derived, never typed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Lnc = Literal[1, 2]

#: NeuronCore-v3 physical cores on one Trainium2 chip.
PHYSICAL_CORES_PER_CHIP = 8
#: HBM on one Trainium2 chip, GiB.
HBM_GIB_PER_CHIP = 96


@dataclass(frozen=True)
class Trn2Instance:
    """One Trn2 instance type as the Neuron runtime sees it."""

    name: str
    chips: int
    vcpus: int
    memory_gib: int
    efa_interfaces: int
    """Network cards that carry an EFA device (0: the type has no EFA; trn2.3xlarge)."""
    #: Local NVMe instance store in GB (decimal, as EC2 states it); None where this table does
    #: not know it (then the kubelet's disk is the root EBS volume).
    instance_store_gb: int | None = None

    def logical_cores_per_chip(self, lnc: Lnc) -> int:
        """LNC=2 fuses two physical cores into one logical core (the Trn2 default)."""
        return PHYSICAL_CORES_PER_CHIP // lnc

    def logical_cores(self, lnc: Lnc) -> int:
        return self.chips * self.logical_cores_per_chip(lnc)

    def valid_tp_degrees(self, lnc: Lnc) -> list[int]:
        """TP degrees the Neuron runtime places on this instance: powers of two up to all cores."""
        total = self.logical_cores(lnc)
        degrees, d = [], 1
        while d <= total:
            degrees.append(d)
            d *= 2
        return degrees

    def chips_for(self, tensor_parallel_size: int, lnc: Lnc) -> int:
        """Neuron devices (chips) a TP group occupies; the unit of `aws.amazon.com/neuron`."""
        per_chip = self.logical_cores_per_chip(lnc)
        return max(1, -(-tensor_parallel_size // per_chip))


INSTANCE_TYPES: dict[str, Trn2Instance] = {
    i.name: i
    for i in (
        # 4 x 1.9 TB NVMe instance store (Amazon EC2 Trn2 instance page).
        Trn2Instance(
            "trn2.48xlarge",
            chips=16,
            vcpus=192,
            memory_gib=2048,
            efa_interfaces=16,
            instance_store_gb=4 * 1900,
        ),
        # trn2u.48xlarge: instance store not verified here, so not used.
        Trn2Instance("trn2u.48xlarge", chips=16, vcpus=192, memory_gib=2048, efa_interfaces=16),
        # 1 x 470 GB NVMe instance store (EC2 DescribeInstanceTypes: InstanceStorageInfo, as
        # bundled in moto 5.2.6's ec2/resources/instance_types.json; a test checks this table
        # against that data).
        Trn2Instance(
            "trn2.3xlarge",
            chips=1,
            vcpus=12,
            memory_gib=128,
            efa_interfaces=0,
            instance_store_gb=470,
        ),
    )
}


def instance(name: str) -> Trn2Instance:
    """Look up an instance type; the KeyError names the supported ones."""
    try:
        return INSTANCE_TYPES[name]
    except KeyError:
        raise KeyError(
            f"unknown Trn2 instance type {name!r}; supported: {', '.join(INSTANCE_TYPES)}"
        ) from None
