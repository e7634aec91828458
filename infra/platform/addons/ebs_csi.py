"""EBS volumes for pods: the EBS CSI driver (EKS add-on, Pod Identity) and the gp3 StorageClass.

EKS installs no CSI driver for EBS and at most a legacy `gp2` class; without both, a claim (the
workload's `weights_storage: ebs` volume, Prometheus' TSDB) stays Pending forever. Volumes are
encrypted with a customer-managed KMS key the driver's role may use only through EC2 grants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.platform.addons.addon import Addon
from infra.platform.addons.pins import EBS_CSI_DRIVER

#: Its relations to the other add-ons (checked at synth, infra/platform/addons/selection.py).
ADDON = Addon(name="ebs_csi")

NAMESPACE = "kube-system"
#: Service account of the driver's controller (the add-on creates it).
SERVICE_ACCOUNT = "ebs-csi-controller-sa"
PROVISIONER = "ebs.csi.aws.com"
#: Tag the driver sets on every volume it creates (kubernetes-sigs/aws-ebs-csi-driver
#: docs/example-iam-policy.json scopes creation and deletion by it).
CLUSTER_TAG = "ebs.csi.aws.com/cluster"


@dataclass(frozen=True)
class EbsCsiProps:
    """Inputs of the EBS CSI driver and its StorageClass."""

    cluster: eks.Cluster
    """Cluster to install into."""
    storage_class: str
    """Name of the gp3 StorageClass (the serving setting `ebs_storage_class` names it)."""


def storage_class(name: str, key_arn: str) -> dict[str, Any]:
    """gp3, encrypted with the platform's key, bound where the pod lands (volumes are AZ-bound)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
        "reclaimPolicy": "Delete",
        "parameters": {
            "type": "gp3",
            "encrypted": "true",
            "kmsKeyId": key_arn,
            "csi.storage.k8s.io/fstype": "ext4",
        },
    }


def driver_statements(stack: Stack, key: kms.IKey) -> list[iam.PolicyStatement]:
    """The driver's published example policy without snapshots (nothing here takes them),
    scoped to this region and account, plus KMS use of the volume key only through EC2."""
    ec2 = f"arn:{stack.partition}:ec2:{stack.region}:{stack.account}"
    volume, instance = f"{ec2}:volume/*", f"{ec2}:instance/*"
    return [
        iam.PolicyStatement(
            sid="Describe",
            actions=[
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeInstances",
                "ec2:DescribeSnapshots",
                "ec2:DescribeTags",
                "ec2:DescribeVolumes",
                "ec2:DescribeVolumesModifications",
                "ec2:DescribeVolumeStatus",
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="CreateTaggedVolumes",
            actions=["ec2:CreateVolume"],
            resources=[volume],
            conditions={"StringLike": {f"aws:RequestTag/{CLUSTER_TAG}": "true"}},
        ),
        iam.PolicyStatement(
            sid="TagOnCreate",
            actions=["ec2:CreateTags"],
            resources=[volume],
            conditions={"StringEquals": {"ec2:CreateAction": ["CreateVolume"]}},
        ),
        iam.PolicyStatement(
            sid="AttachAndModify",
            actions=["ec2:AttachVolume", "ec2:DetachVolume", "ec2:ModifyVolume"],
            resources=[volume, instance],
        ),
        iam.PolicyStatement(
            sid="DeleteOwnVolumes",
            actions=["ec2:DeleteVolume"],
            resources=[volume],
            conditions={"StringLike": {f"ec2:ResourceTag/{CLUSTER_TAG}": "true"}},
        ),
        iam.PolicyStatement(
            sid="VolumeKeyGrants",
            actions=["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"],
            resources=[key.key_arn],
            conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
        ),
        iam.PolicyStatement(
            sid="VolumeKeyUse",
            actions=[
                "kms:Encrypt",
                "kms:Decrypt",
                "kms:ReEncryptFrom",
                "kms:ReEncryptTo",
                "kms:GenerateDataKey",
                "kms:GenerateDataKeyWithoutPlaintext",
                "kms:DescribeKey",
            ],
            resources=[key.key_arn],
        ),
    ]


class EbsCsi(Construct):
    """The add-on, its role, the volume key and the StorageClass (attributes: `addon`, `role`,
    `key`, `storage_class`)."""

    def __init__(self, scope: Construct, construct_id: str, props: EbsCsiProps) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            "VolumeKey",
            description="EBS volumes of pods (EBS CSI driver)",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
            description="EBS CSI driver controller (Pod Identity)",
        )
        self.policy = iam.Policy(
            self, "Policy", statements=driver_statements(stack, self.key), roles=[self.role]
        )
        self.addon = eks.CfnAddon(
            self,
            "Addon",
            addon_name=EBS_CSI_DRIVER.name,
            cluster_name=props.cluster.cluster_name,
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=self.role.role_arn, service_account=SERVICE_ACCOUNT
                )
            ],
            resolve_conflicts="OVERWRITE",
        )
        # The driver starts with its permissions in place.
        self.addon.node.add_dependency(self.policy)
        self.storage_class = eks.KubernetesManifest(
            self,
            "StorageClass",
            cluster=props.cluster,
            manifest=[storage_class(props.storage_class, self.key.key_arn)],
        )
        self.storage_class.node.add_dependency(self.addon)
