"""Karpenter's NodePool and EC2NodeClass for one Trn2 pool: which instances it may launch, with
which AMI, disks, user data and capacity, and how many."""

from __future__ import annotations

from typing import Any

from trnspec.config.scale_down import EMPTY_NODE_REMOVAL_MINUTES
from trnspec.hardware.topology import instance

from infra.platform.cluster.neuron_node import (
    NEURON_DEVICE_RESOURCE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
    custom_node_labels,
    mime_user_data,
    uses_instance_store,
)
from infra.platform.cluster.root_volume import root_volume
from infra.settings import Trn2PoolSettings

#: Karpenter's capacity type for each pool capacity kind (capacity blocks and ODCRs are both
#: `reserved` from v1.6 on).
CAPACITY_TYPES = {"on-demand": "on-demand", "capacity-block": "reserved", "reservation": "reserved"}


def node_pool(pool: Trn2PoolSettings) -> dict[str, Any]:
    """NodePool for one Trn2 pool: only this type, tainted, bounded by max_size nodes."""
    spec = instance(pool.instance_type)
    requirements: list[dict[str, Any]] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [spec.name]},
        {
            "key": "karpenter.sh/capacity-type",
            "operator": "In",
            "values": [CAPACITY_TYPES[pool.capacity.kind]],
        },
    ]
    if pool.availability_zone:
        requirements.append(
            {
                "key": "topology.kubernetes.io/zone",
                "operator": "In",
                "values": [pool.availability_zone],
            }
        )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {
                "metadata": {"labels": custom_node_labels(pool)},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": pool.name,
                    },
                    "requirements": requirements,
                    "taints": [
                        {
                            "key": NEURON_TAINT_KEY,
                            "value": NEURON_TAINT_VALUE,
                            "effect": NEURON_TAINT_EFFECT,
                        }
                    ],
                    "expireAfter": "Never",
                },
            },
            "limits": {
                "cpu": str(spec.vcpus * pool.max_size),
                NEURON_DEVICE_RESOURCE: str(spec.chips * pool.max_size),
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": f"{EMPTY_NODE_REMOVAL_MINUTES}m",
            },
        },
    }


def node_class(
    pool: Trn2PoolSettings,
    cluster_name: str,
    role_name: str,
    tags: dict[str, str],
    ami_alias: str,
) -> dict[str, Any]:
    """EC2NodeClass: Neuron AMI, discovered subnets/SGs, reservation, LNC user data."""
    root = root_volume(pool)
    subnet_terms: list[dict[str, Any]] = (
        [{"id": sid} for sid in pool.subnet_ids]
        if pool.subnet_ids
        else [{"tags": {"karpenter.sh/discovery": cluster_name}}]
    )
    spec: dict[str, Any] = {
        "role": role_name,
        "amiSelectorTerms": [{"alias": ami_alias}],
        "subnetSelectorTerms": subnet_terms,
        "securityGroupSelectorTerms": [{"tags": {"aws:eks:cluster-name": cluster_name}}],
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {
                    "volumeSize": f"{root.size_gib}Gi",
                    "volumeType": "gp3",
                    "iops": root.iops,
                    "throughput": root.throughput_mibps,
                    "encrypted": True,
                    "deleteOnTermination": True,
                },
            }
        ],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 2,
        },
        "userData": mime_user_data(pool, local_storage=False),
        "tags": dict(tags),
    }
    if uses_instance_store(pool):
        # Karpenter RAID0s the instance store, puts the kubelet on it and counts it as the
        # node's ephemeral storage (karpenter.sh docs, EC2NodeClass instanceStorePolicy).
        spec["instanceStorePolicy"] = "RAID0"
    if pool.capacity.reservation_id:
        spec["capacityReservationSelectorTerms"] = [{"id": pool.capacity.reservation_id}]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": pool.name},
        "spec": spec,
    }
