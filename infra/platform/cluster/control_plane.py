"""The EKS control plane (aws_eks_v2), its core add-ons, kubectl provider and system nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from constructs import Construct

from infra.compliance.keys import rotating_key
from infra.settings import SystemNodeGroupSettings

#: Add-ons every node needs; versions are left to EKS's default for the cluster version,
#: which EKS keeps compatible (a pinned add-on version would break on a version bump).
CORE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
#: Add-on configuration values. The VPC CNI enforces Kubernetes NetworkPolicies only with
#: `enableNetworkPolicy` (a string) set: without it the workload's policies are accepted and
#: ignored (EKS user guide, "Restrict Pod network traffic with Kubernetes network policies").
ADDON_CONFIGURATION: dict[str, dict[str, str]] = {"vpc-cni": {"enableNetworkPolicy": "true"}}
#: How every managed add-on meets what is already on the cluster. A cluster created with
#: `BootstrapSelfManagedAddons` unset (this one) already runs self-managed vpc-cni, kube-proxy
#: and coredns; EKS's CreateAddon with the default (NONE) "doesn't change the value. Creation of
#: the add-on might fail", and OVERWRITE "changes the value to the Amazon EKS default value"
#: (EKS API Reference, CreateAddon `resolveConflicts`). Reported failing on a new cluster with
#: ConfigurationConflict for vpc-cni (PolicyEndpoint CRD), fixed by OVERWRITE
#: (aws/amazon-network-policy-controller-k8s#200). Nothing else edits these add-ons here, so
#: OVERWRITE loses no setting of ours.
RESOLVE_CONFLICTS = "OVERWRITE"
#: Label on system nodes; controllers select it so they never wait for a Trn2 node.
SYSTEM_LABEL = {"trnspec.io/role": "system"}
#: What a worker node needs: join the cluster, pull images, run the CNI, be reachable by SSM
#: (no SSH keys on Trn2 nodes).
NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",
)


def node_role(scope: Construct, construct_id: str) -> iam.Role:
    """The instance role every worker node of this platform gets (system, Trn2, Karpenter)."""
    return iam.Role(
        scope,
        construct_id,
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        managed_policies=[
            iam.ManagedPolicy.from_aws_managed_policy_name(n) for n in NODE_MANAGED_POLICIES
        ],
    )


ENDPOINT_ACCESS = {
    "public-and-private": eks.EndpointAccess.PUBLIC_AND_PRIVATE,
    "private": eks.EndpointAccess.PRIVATE,
}
CONTROL_PLANE_LOGS = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)


@dataclass(frozen=True)
class ClusterProps:
    """Inputs of the control plane."""

    cluster_name: str
    """EKS cluster name (also names the system node group)."""
    kubernetes_version: str
    """Kubernetes minor of the control plane."""
    endpoint_access: str
    """A key of ENDPOINT_ACCESS: public-and-private, or private (the kubectl handler then runs
    in the private subnets)."""
    admin_principal_arns: tuple[str, ...]
    """IAM role/user ARNs given cluster-admin access entries."""
    system_nodes: SystemNodeGroupSettings
    """Size and type of the non-Trn2 node group."""
    tags: dict[str, str]
    """Tags on the cluster resource."""
    vpc: ec2.IVpc
    """Where the control plane ENIs and nodes live."""
    subnets: ec2.SubnetSelection
    """Private subnets for the cluster and the system nodes."""


class Cluster(Construct):
    """EKS with KMS-encrypted secrets, full control-plane logging and access entries."""

    def __init__(self, scope: Construct, construct_id: str, props: ClusterProps) -> None:
        super().__init__(scope, construct_id)
        s = props  # (short name)
        self.secrets_key = rotating_key(
            self, "SecretsKey", f"EKS secrets envelope encryption for {s.cluster_name}"
        )
        self.kubectl_layer = KubectlV36Layer(self, "KubectlLayer")
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=s.cluster_name,
            version=eks.KubernetesVersion.of(s.kubernetes_version),
            vpc=props.vpc,
            vpc_subnets=[props.subnets],
            default_capacity=0,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            endpoint_access=ENDPOINT_ACCESS[s.endpoint_access],
            cluster_logging=list(CONTROL_PLANE_LOGS),
            secrets_encryption_key=self.secrets_key,
            bootstrap_cluster_creator_admin_permissions=True,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=self.kubectl_layer,
                private_subnets=props.vpc.select_subnets(
                    subnet_type=props.subnets.subnet_type
                ).subnets
                if s.endpoint_access == "private"
                else None,
            ),
            tags=dict(s.tags),
        )
        for i, arn in enumerate(s.admin_principal_arns):
            self.cluster.grant_access(
                f"Admin{i}",
                arn,
                [
                    eks.AccessPolicy.from_access_policy_name(
                        "AmazonEKSClusterAdminPolicy",
                        access_scope_type=eks.AccessScopeType.CLUSTER,
                    )
                ],
            )
        self.addons = {
            name: eks.Addon(
                self,
                f"Addon-{name}",
                addon_name=name,
                cluster=self.cluster,
                configuration_values=ADDON_CONFIGURATION.get(name),
            )
            for name in CORE_ADDONS
        }
        for addon in self.addons.values():
            # aws_eks_v2.Addon has no prop for it: set it on the AWS::EKS::Addon it creates.
            cast(eks.CfnAddon, addon.node.default_child).resolve_conflicts = RESOLVE_CONFLICTS
        self.node_role = node_role(self, "SystemNodeRole")
        sn = s.system_nodes
        self.system_nodegroup = eks.Nodegroup(
            self,
            "SystemNodes",
            cluster=self.cluster,
            nodegroup_name=f"{s.cluster_name}-system",
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            instance_types=[ec2.InstanceType(sn.instance_type)],
            min_size=sn.min_size,
            desired_size=sn.desired_size,
            max_size=sn.max_size,
            disk_size=sn.disk_gib,
            labels=dict(SYSTEM_LABEL),
            node_role=self.node_role,
            subnets=props.subnets,
        )
        # CoreDNS needs a node to become ACTIVE; without this the add-on waits on nothing.
        self.addons["coredns"].node.add_dependency(self.system_nodegroup)
