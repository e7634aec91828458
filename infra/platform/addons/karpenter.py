"""Karpenter: controller (chart, Pod Identity role) plus one NodePool + EC2NodeClass per pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct
from trnspec.hardware.topology import instance

from infra.platform.addons.addon import ONE_NODE_AUTOSCALER, Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.controller import KUBE_SYSTEM, controller_identity
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.iam.karpenter import controller_statements
from infra.platform.addons.pins import KARPENTER_CHART, KARPENTER_CRD_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL, node_role
from infra.platform.cluster.neuron_node import (
    NEURON_DEVICE_RESOURCE,
    NEURON_TAINT_EFFECT,
    NEURON_TAINT_KEY,
    NEURON_TAINT_VALUE,
    custom_node_labels,
    mime_user_data,
    uses_instance_store,
)
from infra.settings import DeploymentSettings, Trn2PoolSettings

SERVICE_ACCOUNT = "karpenter"
CAPACITY_TYPES = {"on-demand": "on-demand", "capacity-block": "reserved", "reservation": "reserved"}


@dataclass(frozen=True)
class KarpenterProps:
    """Inputs of Karpenter."""

    cluster: eks.Cluster
    """Cluster to install into."""
    cluster_name: str
    """Literal name: discovery tags, IAM conditions."""
    pools: tuple[Trn2PoolSettings, ...]
    """One NodePool + EC2NodeClass each."""
    tags: dict[str, str]
    """Tags for the instances Karpenter launches."""
    ami_alias: str
    """AL2023 alias (`al2023@v<release>`): Karpenter picks its Neuron variant for trn2 types."""
    timeout_minutes: int = 15
    """How long the deploy waits for each of Karpenter's releases to be ready."""


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
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "15m"},
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
                    "volumeSize": f"{pool.root_volume_gib}Gi",
                    "volumeType": "gp3",
                    "iops": 16000,
                    "throughput": 1000,
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


def controller_values(props: KarpenterProps, region: str) -> dict[str, Any]:
    """The controller's chart values: this cluster, reserved capacity, on the system nodes."""
    return {
        "settings": {
            "clusterName": props.cluster_name,
            "featureGates": {"reservedCapacity": True},
        },
        # Explicit region: otherwise the controller asks instance metadata, which depends on
        # the system nodes' hop limit.
        "controller": {"env": [{"name": "AWS_REGION", "value": region}]},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(SYSTEM_LABEL),
        "replicas": 2,
    }


class Karpenter(Construct):
    """Karpenter controller on the system nodes and the Trn2 NodePools it serves."""

    def __init__(self, scope: Construct, construct_id: str, props: KarpenterProps) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.node_role = node_role(self, "NodeRole")
        self.node_access = eks.AccessEntry(
            self,
            "NodeAccess",
            cluster=props.cluster,
            principal=self.node_role.role_arn,
            access_entry_type=eks.AccessEntryType.EC2_LINUX,
            access_policies=[],
        )
        self.controller_identity = controller_identity(
            self,
            "ControllerIdentity",
            props.cluster,
            SERVICE_ACCOUNT,
            "Karpenter controller (Pod Identity)",
        )
        self.controller_role = self.controller_identity.role
        for statement in controller_statements(stack, props.cluster_name, self.node_role):
            self.controller_role.add_to_policy(statement)
        self._releases(props, stack.region)
        self.node_pools = eks.KubernetesManifest(
            self, "NodePools", cluster=props.cluster, manifest=self._pool_manifests(props)
        )
        # The CRDs arrive with their chart; the controller validates and reconciles the pools.
        self.node_pools.node.add_dependency(self.crds)
        self.node_pools.node.add_dependency(self.chart)

    def _releases(self, props: KarpenterProps, region: str) -> None:
        """The CRDs as their own release, so `helm upgrade` moves them with the controller (Helm
        installs a chart's crds/ directory once and never upgrades it), then the controller."""
        self.crds = helm_release(
            self,
            "Crds",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=KARPENTER_CRD_CHART,
                release="karpenter-crd",
                namespace=KUBE_SYSTEM,
                values={},
                timeout_minutes=props.timeout_minutes,
            ),
        )
        self.chart = helm_release(
            self,
            "Chart",
            HelmReleaseProps(
                cluster=props.cluster,
                pin=KARPENTER_CHART,
                release="karpenter",
                namespace=KUBE_SYSTEM,
                skip_crds=True,
                values=controller_values(props, region),
                timeout_minutes=props.timeout_minutes,
            ),
        )
        self.chart.node.add_dependency(self.crds)
        self.chart.node.add_dependency(self.controller_identity.association)

    def _pool_manifests(self, props: KarpenterProps) -> list[dict[str, Any]]:
        """An EC2NodeClass and a NodePool per Trn2 pool."""
        role = self.node_role.role_name
        return [
            doc
            for pool in props.pools
            for doc in (
                node_class(pool, props.cluster_name, role, props.tags, props.ami_alias),
                node_pool(pool),
            )
        ]


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """The node autoscaler when the profile picks it (`autoscaler: karpenter`)."""
    return settings.autoscaler == "karpenter"


def build(scope: AddonScope) -> Karpenter:
    """The controller and one NodePool + EC2NodeClass per Trn2 pool."""
    settings = scope.settings
    props = KarpenterProps(
        cluster=scope.cluster,
        cluster_name=settings.cluster_name,
        pools=settings.trn2_pools,
        tags=dict(settings.tags),
        ami_alias=settings.karpenter_ami_alias,
        timeout_minutes=scope.timeout_minutes,
    )
    return Karpenter(scope.stack, "Karpenter", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(
    name="karpenter",
    installed=installed,
    build=build,
    excludes=frozenset({"cluster_autoscaler"}),
    reason=ONE_NODE_AUTOSCALER,
)
