"""The EBS CSI driver's IAM policy: its published example policy
(kubernetes-sigs/aws-ebs-csi-driver docs/example-iam-policy.json) without snapshots, scoped to
this region and account, plus use of the volume key only through EC2 grants."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from infra.platform.addons.statements import allow, regional_arn

#: Tag the driver sets on every volume it creates (the published policy scopes creation and
#: deletion by it).
CLUSTER_TAG = "ebs.csi.aws.com/cluster"

#: The published policy's read-only actions (on every resource).
DESCRIBE = (
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeInstances",
    "ec2:DescribeSnapshots",
    "ec2:DescribeTags",
    "ec2:DescribeVolumes",
    "ec2:DescribeVolumesModifications",
    "ec2:DescribeVolumeStatus",
)
#: What EC2 does with the volume key on the driver's behalf.
VOLUME_KEY_USE = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:DescribeKey",
)


def driver_statements(stack: Stack, key: kms.IKey) -> list[iam.PolicyStatement]:
    """The driver's published example policy without snapshots (nothing here takes them),
    scoped to this region and account, plus KMS use of the volume key only through EC2."""
    ec2 = regional_arn(stack, "ec2")
    volume, instance = f"{ec2}:volume/*", f"{ec2}:instance/*"
    requested = {"StringLike": {f"aws:RequestTag/{CLUSTER_TAG}": "true"}}
    tagged = {"StringLike": {f"ec2:ResourceTag/{CLUSTER_TAG}": "true"}}
    on_create = {"StringEquals": {"ec2:CreateAction": ["CreateVolume"]}}
    for_aws = {"Bool": {"kms:GrantIsForAWSResource": "true"}}
    attach = ["ec2:AttachVolume", "ec2:DetachVolume", "ec2:ModifyVolume"]
    grants = ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"]
    return [
        allow("Describe", DESCRIBE),
        allow("CreateTaggedVolumes", ["ec2:CreateVolume"], [volume], requested),
        allow("TagOnCreate", ["ec2:CreateTags"], [volume], on_create),
        allow("AttachAndModify", attach, [volume, instance]),
        allow("DeleteOwnVolumes", ["ec2:DeleteVolume"], [volume], tagged),
        allow("VolumeKeyGrants", grants, [key.key_arn], for_aws),
        allow("VolumeKeyUse", VOLUME_KEY_USE, [key.key_arn]),
    ]
