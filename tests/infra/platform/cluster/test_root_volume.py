"""The root volume holds the OS where the kubelet lives on the instance store, and is the
kubelet's fast disk elsewhere; an explicit size is kept; both node-group kinds use the same."""

from __future__ import annotations

import pytest

from infra.platform.addons.karpenter.node_pools import node_class
from infra.platform.cluster.neuron_node import mime_user_data, uses_instance_store
from infra.platform.cluster.root_volume import root_volume
from infra.settings import Trn2PoolSettings


@pytest.mark.parametrize("itype", ["trn2.48xlarge", "trn2.3xlarge"])
def test_with_an_instance_store_the_root_is_small_and_at_gp3_baseline(itype: str) -> None:
    pool = Trn2PoolSettings(name="p", instance_type=itype)
    assert uses_instance_store(pool)
    # The RAID0 that moves the kubelet and containerd off the root is in the same node's data.
    assert "strategy: RAID0" in mime_user_data(pool)
    volume = root_volume(pool)
    assert (volume.size_gib, volume.iops, volume.throughput_mibps) == (100, 3000, 125)


def test_without_an_instance_store_the_root_is_the_kubelets_fast_disk() -> None:
    pool = Trn2PoolSettings(name="p", instance_type="trn2u.48xlarge")
    assert not uses_instance_store(pool)
    volume = root_volume(pool)
    assert (volume.size_gib, volume.iops, volume.throughput_mibps) == (512, 16000, 1000)


def test_an_explicit_size_is_kept() -> None:
    pool = Trn2PoolSettings(name="p", root_volume_gib=250)
    assert root_volume(pool).size_gib == 250


def test_karpenter_node_classes_use_the_same_volume() -> None:
    pool = Trn2PoolSettings(name="p")
    ebs = node_class(pool, "c", "role", {}, "al2023@latest")["spec"]["blockDeviceMappings"][0][
        "ebs"
    ]
    assert (ebs["volumeSize"], ebs["iops"], ebs["throughput"]) == ("100Gi", 3000, 125)
    assert node_class(pool, "c", "role", {}, "al2023@latest")["spec"]["instanceStorePolicy"] == (
        "RAID0"
    )
