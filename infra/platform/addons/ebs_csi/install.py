"""EBS volumes for pods: the EBS CSI driver (EKS add-on, Pod Identity) and the gp3 StorageClass.

EKS installs no CSI driver for EBS and at most a legacy `gp2` class; without both, a claim (the
workload's `weights_storage: ebs` volume, Prometheus' TSDB) stays Pending forever. Volumes are
encrypted with a customer-managed KMS key the driver's role may use only through EC2 grants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.compliance.keys import rotating_key
from infra.platform.addons.addon import Addon, AddonScope, always
from infra.platform.addons.ebs_csi.iam import driver_statements
from infra.platform.addons.pins import EBS_CSI_DRIVER
from infra.platform.cluster.control_plane import RESOLVE_CONFLICTS

#: Service account of the driver's controller (the add-on creates it).
SERVICE_ACCOUNT = "ebs-csi-controller-sa"
PROVISIONER = "ebs.csi.aws.com"


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


class EbsCsi(Construct):
    """The add-on, its role, the volume key and the StorageClass (attributes: `addon`, `role`,
    `key`, `storage_class`)."""

    def __init__(self, scope: Construct, construct_id: str, props: EbsCsiProps) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.key = rotating_key(self, "VolumeKey", "EBS volumes of pods (EBS CSI driver)")
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
            resolve_conflicts=RESOLVE_CONFLICTS,
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


def build(scope: AddonScope) -> EbsCsi:
    """The driver and the workload's gp3 StorageClass."""
    props = EbsCsiProps(cluster=scope.cluster, storage_class=scope.needs.storage_class)
    return EbsCsi(scope.stack, "EbsCsi", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="ebs_csi", installed=always, build=build)
