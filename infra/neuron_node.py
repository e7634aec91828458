"""What a Trn2 node looks like to Kubernetes: labels, taint, extended resources, user data.

Pure functions shared by the managed node groups (and their Cluster Autoscaler node-template
tags) and the Karpenter NodePools, so both autoscalers see identical nodes.
"""

from __future__ import annotations

from trnspec.topology import instance

from infra.settings import Trn2PoolSettings

# The taint and device resource are shared with the workload manifests (one definition).
from infra.workload.constants import (
    NEURON_DEVICE_RESOURCE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
)

#: Extended resource for (logical) NeuronCores.
NEURON_CORE_RESOURCE = "aws.amazon.com/neuroncore"
#: Label naming the pool a node belongs to (workloads select on it).
POOL_LABEL = "trnspec.io/pool"
LNC_LABEL = "trnspec.io/lnc"
#: CloudFormation's spelling of the Neuron AMI type (the Python enum's `.value` differs).
NEURON_AMI_TYPE = "AL2023_x86_64_NEURON"
#: Autoscaler node-template tag prefix on the Auto Scaling group.
_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def node_labels(pool: Trn2PoolSettings) -> dict[str, str]:
    """Labels every node of the pool carries."""
    return {
        **pool.labels,
        POOL_LABEL: pool.name,
        LNC_LABEL: str(pool.lnc),
        "node.kubernetes.io/instance-type": pool.instance_type,
    }


def custom_node_labels(pool: Trn2PoolSettings) -> dict[str, str]:
    """The labels we set ourselves (instance-type is set by the kubelet)."""
    labels = node_labels(pool)
    labels.pop("node.kubernetes.io/instance-type")
    return labels


def node_resources(pool: Trn2PoolSettings) -> dict[str, int]:
    """Extended resources a node of the pool offers once the device plugin runs."""
    spec = instance(pool.instance_type)
    return {
        NEURON_DEVICE_RESOURCE: spec.chips,
        NEURON_CORE_RESOURCE: spec.logical_cores(pool.lnc),
    }


def node_template_tags(pool: Trn2PoolSettings) -> dict[str, str]:
    """ASG tags that let the Cluster Autoscaler build a node from nothing (scale from zero):
    without the neuron resource tag it never believes a Trn2 node could fit a pending pod."""
    tags = {f"{_TEMPLATE}/label/{k}": v for k, v in node_labels(pool).items()}
    tags[f"{_TEMPLATE}/taint/{NEURON_TAINT_KEY}"] = f"{NEURON_TAINT_VALUE}:{NEURON_TAINT_EFFECT}"
    for name, count in node_resources(pool).items():
        tags[f"{_TEMPLATE}/resources/{name}"] = str(count)
    return tags


_BOUNDARY = "==TRNSPEC=="


def user_data_script(pool: Trn2PoolSettings) -> str:
    """Shell part run before the node joins: LNC must be set before the runtime starts."""
    lines = [
        "#!/bin/bash",
        "set -euo pipefail",
        "mkdir -p /opt/aws/neuron",
        f"echo {pool.lnc} > /opt/aws/neuron/logical_nc_config",
    ]
    if pool.efa:
        # The Neuron AMI ships the EFA driver; raise memlock for EFA's registered memory.
        lines += [
            "echo '* hard memlock unlimited' > /etc/security/limits.d/efa.conf",
            "echo '* soft memlock unlimited' >> /etc/security/limits.d/efa.conf",
        ]
    return "\n".join(lines) + "\n"


def mime_user_data(pool: Trn2PoolSettings) -> str:
    """EKS managed node groups merge launch-template user data only in MIME multipart form."""
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{_BOUNDARY}"\n\n'
        f"--{_BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{user_data_script(pool)}\n"
        f"--{_BOUNDARY}--\n"
    )
