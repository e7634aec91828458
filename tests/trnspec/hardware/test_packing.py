"""Replicas per node: one pure answer from a replica's requests and a node's allocatable, with the
resource that limits it (packing, read by predict, plan-deploy and the deploy's checks)."""

from __future__ import annotations

import pytest
from trnspec.config.serving import load_profile
from trnspec.hardware.packing import (
    Resources,
    ephemeral_storage_allocatable_gib,
    kubelet_disk,
    node_allocatable,
    placement_for,
    pod_requests,
    replicas_per_node,
    staged_storage_gib,
)

NODE = Resources(chips=16, cpu=191.0, memory_gib=1893.0, ephemeral_gib=6369)


@pytest.mark.parametrize(
    ("pod", "replicas", "limit"),
    [
        (Resources(1, 10, 115, 48), 16, "aws.amazon.com/neuron"),
        (Resources(4, 40, 460, 48), 4, "aws.amazon.com/neuron"),
        (Resources(1, 10, 115, 459), 13, "ephemeral-storage"),
        (Resources(1, 24, 115, 48), 7, "cpu"),
        (Resources(1, 10, 200, 48), 9, "memory"),
        (Resources(17, 10, 115, 48), 0, "aws.amazon.com/neuron"),
        (Resources(1, 10, 115, 0), 16, "aws.amazon.com/neuron"),
    ],
    ids=["one-chip", "four-chips", "storage", "cpu", "memory", "too-many-chips", "no-storage"],
)
def test_replicas_per_node_is_the_smallest_quotient_and_names_its_resource(
    pod: Resources, replicas: int, limit: str
) -> None:
    packing = replicas_per_node(pod, NODE)
    assert (packing.replicas, packing.limit) == (replicas, limit)
    assert packing.reason.startswith(f"{limit}: {replicas} x ")


def test_the_root_volume_held_nine_default_replicas_the_instance_store_holds_sixteen() -> None:
    pod = pod_requests("trn2.48xlarge", 4, 2, 48)
    root = Resources(16, 191.0, 1893.0, ephemeral_storage_allocatable_gib(512))
    assert replicas_per_node(pod, root).replicas == 9
    assert replicas_per_node(pod, node_allocatable("trn2.48xlarge")).replicas == 16


def test_a_replica_asks_for_its_chips_share_of_the_nodes_cpu_and_memory() -> None:
    assert pod_requests("trn2.48xlarge", 4, 2, 48) == Resources(1, 10, 115, 48)
    assert pod_requests("trn2.48xlarge", 64, 2, 300) == Resources(16, 172, 1843, 300)
    assert pod_requests("trn2.3xlarge", 4, 2, 48) == Resources(1, 10, 115, 48)


def test_the_kubelet_disk_is_the_instance_store_where_the_type_has_one() -> None:
    assert kubelet_disk("trn2.48xlarge", 512) == (7078, "instance-store NVMe (RAID0, 7078 GiB)")
    # trn2.3xlarge: one 470 GB disk (EC2 DescribeInstanceTypes), 437 GiB.
    assert kubelet_disk("trn2.3xlarge", 512) == (437, "instance-store NVMe (RAID0, 437 GiB)")
    assert kubelet_disk("trn2u.48xlarge", 512) == (512, "root EBS volume (512 GiB)")
    # 7078 GiB - 10 % eviction threshold - 1 GiB kube-reserved; 512 GiB root: 459.
    assert node_allocatable("trn2.48xlarge").ephemeral_gib == 6369
    assert node_allocatable("trn2u.48xlarge").ephemeral_gib == 459


def test_booted_node_memory_and_cpu_are_what_karpenter_models() -> None:
    node = node_allocatable("trn2.48xlarge")
    # 2048 GiB less 7.5 % VM overhead less (11 x 110 + 255 + 100) MiB; 192 vCPU less 0.16.
    assert node.memory_gib == pytest.approx(2048 * 0.925 - 1565 / 1024)
    assert node.cpu == pytest.approx(192 - 0.06 - 0.01 - 0.01 - 188 * 0.0025)


@pytest.mark.parametrize(
    ("profile", "gib"),
    [("qwen3-4b-dflash", 48), ("qwen3-4b-baseline", 40), ("llama31-70b-draft", 360)],
)
def test_staged_storage_follows_the_weights_of_target_and_drafter(profile: str, gib: int) -> None:
    staged = staged_storage_gib(load_profile(profile))
    assert staged is not None
    assert staged.gib == gib
    assert staged.gib >= 2 * staged.weights_gib


def test_an_unknown_target_has_no_storage_figure_rather_than_a_guess() -> None:
    from trnspec.config.serving import apply_overrides

    cfg = apply_overrides(
        load_profile("qwen3-4b-baseline"),
        ["target.source=s3://bucket/models/x/", "target.name=x/y"],
    )
    assert staged_storage_gib(cfg) is None
    assert placement_for(cfg) is None
    assert placement_for(cfg, ephemeral_gib=100) is not None
