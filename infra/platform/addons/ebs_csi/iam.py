"""The EBS CSI driver's IAM policy: its published example policy
(kubernetes-sigs/aws-ebs-csi-driver docs/example-iam-policy.json) without snapshots, scoped to
this region and account, plus use of the volume key only through EC2 grants."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

#: Tag the driver sets on every volume it creates (the published policy scopes creation and
#: deletion by it).
CLUSTER_TAG = "ebs.csi.aws.com/cluster"


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
