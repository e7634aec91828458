"""What a Trn2 node looks like to Kubernetes: labels, taint, extended resources, user data.

Pure functions shared by the managed node groups (and their Cluster Autoscaler node-template
tags) and the Karpenter NodePools, so both autoscalers see identical nodes.
"""

from __future__ import annotations

from trnspec.hardware.packing import ephemeral_storage_allocatable_gib, kubelet_disk
from trnspec.hardware.topology import instance

# The taint, device resources and labels the workload selects on: the platform's node contract.
from infra.contracts import (
    INSTANCE_TYPE_LABEL,
    NEURON_CORE_RESOURCE,
    NEURON_DEVICE_RESOURCE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
)
from infra.contracts import LNC_NODE_LABEL as LNC_LABEL
from infra.platform.cluster.root_volume import root_volume
from infra.settings import Trn2PoolSettings

#: Label naming the pool a node belongs to.
POOL_LABEL = "trnspec.io/pool"
#: CloudFormation's spelling of the Neuron AMI type (the Python enum's `.value` differs).
NEURON_AMI_TYPE = "AL2023_x86_64_NEURON"
#: Autoscaler node-template tag prefix on the Auto Scaling group.
_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
#: Where the Neuron runtime reads the node's logical NeuronCore config, and the line it expects
#: (Neuron EKS prerequisites, "Trn2 LNC configuration":
#: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/eks/prerequisites.html).
LNC_CONFIG_FILE = "/opt/aws/neuron/logical_nc_config"
LNC_CONFIG_VARIABLE = "NEURON_LOGICAL_NC_CONFIG"


def node_labels(pool: Trn2PoolSettings) -> dict[str, str]:
    """Labels every node of the pool carries."""
    return {
        **pool.labels,
        POOL_LABEL: pool.name,
        LNC_LABEL: str(pool.lnc),
        INSTANCE_TYPE_LABEL: pool.instance_type,
    }


def custom_node_labels(pool: Trn2PoolSettings) -> dict[str, str]:
    """The labels we set ourselves (instance-type is set by the kubelet)."""
    labels = node_labels(pool)
    labels.pop(INSTANCE_TYPE_LABEL)
    return labels


def node_resources(pool: Trn2PoolSettings) -> dict[str, int]:
    """Extended resources a node of the pool offers once the device plugin runs."""
    spec = instance(pool.instance_type)
    return {
        NEURON_DEVICE_RESOURCE: spec.chips,
        NEURON_CORE_RESOURCE: spec.logical_cores(pool.lnc),
    }


def node_ephemeral_storage_gib(pool: Trn2PoolSettings) -> int:
    """Whole GiB of ephemeral storage a node of the pool offers pods: the kubelet's filesystem
    (the instance-store RAID0 where the instance type has one, else the root volume) less
    kube-reserved and the nodefs eviction threshold (trnspec.hardware.packing, which `predict`
    reads too).
    """
    disk, _ = kubelet_disk(pool.instance_type, root_volume(pool).size_gib)
    return ephemeral_storage_allocatable_gib(disk)


def uses_instance_store(pool: Trn2PoolSettings) -> bool:
    """Whether the pool's nodes put the kubelet and containerd on the instance-store NVMe."""
    return instance(pool.instance_type).instance_store_gb is not None


def node_template_tags(pool: Trn2PoolSettings) -> dict[str, str]:
    """Tags that let the Cluster Autoscaler build a node of an empty group (scale from zero).

    Its AWS provider imagines such a node from the instance type (cpu, memory, pods) plus
    `k8s.io/cluster-autoscaler/node-template/{resources,label,taint}/...` tags, and takes the
    result as allocatable as is (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws
    README and aws_manager.go `buildNodeFromTemplate`). Without the neuron tag it never believes
    a Trn2 node fits a pending pod; without the ephemeral-storage tag the node has no ephemeral
    storage at all and a pod requesting some reads "Insufficient ephemeral-storage"
    (kubernetes/autoscaler#1869). The storage figure is the kubelet filesystem's allocatable
    share: the instance-store RAID0 where the type has one, else the root volume.
    """
    tags = {f"{_TEMPLATE}/label/{k}": v for k, v in node_labels(pool).items()}
    tags[f"{_TEMPLATE}/taint/{NEURON_TAINT_KEY}"] = f"{NEURON_TAINT_VALUE}:{NEURON_TAINT_EFFECT}"
    for name, count in node_resources(pool).items():
        tags[f"{_TEMPLATE}/resources/{name}"] = str(count)
    storage = node_ephemeral_storage_gib(pool)
    tags[f"{_TEMPLATE}/resources/ephemeral-storage"] = f"{storage}Gi"
    return tags


_BOUNDARY = "==TRNSPEC=="


def user_data_script(pool: Trn2PoolSettings) -> str:
    """Shell part run before the node joins: LNC must be set before the runtime starts."""
    lines = [
        "#!/bin/bash",
        "set -euo pipefail",
        "mkdir -p /opt/aws/neuron",
        f"echo {LNC_CONFIG_VARIABLE}={pool.lnc} > {LNC_CONFIG_FILE}",
    ]
    if pool.efa:
        # The Neuron AMI ships the EFA driver; raise memlock for EFA's registered memory.
        lines += [
            "echo '* hard memlock unlimited' > /etc/security/limits.d/efa.conf",
            "echo '* soft memlock unlimited' >> /etc/security/limits.d/efa.conf",
        ]
    return "\n".join(lines) + "\n"


#: nodeadm's NodeConfig that RAID0s every instance-store NVMe disk and mounts the kubelet's and
#: containerd's state on it (awslabs/amazon-eks-ami nodeadm/doc/api.md: LocalStorageOptions,
#: strategy enum RAID0 | RAID10 | Mount; default mount path /mnt/k8s-disks/).
LOCAL_STORAGE_NODECONFIG = (
    "---\n"
    "apiVersion: node.eks.aws/v1alpha1\n"
    "kind: NodeConfig\n"
    "spec:\n"
    "  instance:\n"
    "    localStorage:\n"
    "      strategy: RAID0\n"
)


def mime_user_data(pool: Trn2PoolSettings, *, local_storage: bool = True) -> str:
    """EKS managed node groups merge launch-template user data only in MIME multipart form.

    With `local_storage` (managed node groups; Karpenter sets the same through the EC2NodeClass's
    instanceStorePolicy) a nodeadm NodeConfig part puts the kubelet on the instance store where
    the instance type has one; nodeadm merges it with the NodeConfig EKS adds.
    """
    nodeconfig = ""
    if local_storage and uses_instance_store(pool):
        nodeconfig = (
            f"--{_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n{LOCAL_STORAGE_NODECONFIG}\n"
        )
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{_BOUNDARY}"\n\n'
        f"{nodeconfig}"
        f"--{_BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{user_data_script(pool)}\n"
        f"--{_BOUNDARY}--\n"
    )
