"""`manifests --iam-cluster`'s roles name the resources in the region's own partition: an ARN of
aws-cn or aws-us-gov is `arn:aws-cn:...` or `arn:aws-us-gov:...`, never `arn:aws:...` (which IAM
there refuses). The template is a small one with the forms the synthesized serving stack's
policies use (tests/trnspec_tools/test_manifests_apply.py runs the real one, in us-east-2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trnspec_tools.manifests_iam import IamTargets, RoleToCreate, roles_to_create

BUNDLE_KEY = "b604b1f72e99ba60a6b445007a5e97c18687e660de613a223764a990dfd368de.zip"
BUCKET_ARN = {"Fn::GetAtt": ["ModelBucketEBB1ADF4", "Arn"]}
TEMPLATE: dict[str, Any] = {
    "Resources": {
        "ModelBucketEBB1ADF4": {"Type": "AWS::S3::Bucket"},
        "ServeIdentityPodIdentityRoleD95D584B": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Statement": [
                        {
                            "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Effect": "Allow",
                            "Principal": {"Service": "pods.eks.amazonaws.com"},
                        }
                    ],
                    "Version": "2012-10-17",
                }
            },
        },
        "ServeIdentityPolicyD5958F76": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "Roles": [{"Ref": "ServeIdentityPodIdentityRoleD95D584B"}],
                "PolicyDocument": {
                    "Statement": [
                        {
                            "Sid": "ReadModelsAndCompileCache",
                            "Action": "s3:GetObject",
                            "Effect": "Allow",
                            "Resource": {"Fn::Join": ["", [BUCKET_ARN, "/models/*"]]},
                        },
                        {
                            "Sid": "ListOwnPrefixes",
                            "Action": "s3:ListBucket",
                            "Effect": "Allow",
                            "Resource": BUCKET_ARN,
                        },
                        {
                            "Sid": "DescribeCluster",
                            "Action": "eks:DescribeCluster",
                            "Effect": "Allow",
                            "Resource": {
                                "Fn::Join": [
                                    "",
                                    [
                                        "arn:",
                                        {"Ref": "AWS::Partition"},
                                        ":eks:",
                                        {"Ref": "AWS::Region"},
                                        ":",
                                        {"Ref": "AWS::AccountId"},
                                        ":cluster/my-cluster",
                                    ],
                                ]
                            },
                        },
                        {
                            "Sid": "ReadTrnspecBundle",
                            "Action": "s3:GetObject",
                            "Effect": "Allow",
                            "Resource": {
                                "Fn::Join": [
                                    "",
                                    [
                                        "arn:",
                                        {"Ref": "AWS::Partition"},
                                        ":s3:::",
                                        {
                                            "Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}"
                                            "-${AWS::Region}"
                                        },
                                        f"/{BUNDLE_KEY}",
                                    ],
                                ]
                            },
                        },
                    ]
                },
            },
        },
        "ServeIdentityAssociation": {
            "Type": "AWS::EKS::PodIdentityAssociation",
            "Properties": {
                "Namespace": "trnspec",
                "ServiceAccount": "trnspec-serve",
                "RoleArn": {"Fn::GetAtt": ["ServeIdentityPodIdentityRoleD95D584B", "Arn"]},
            },
        },
    }
}


def _role(region: str, bundle_uri: str | None = None) -> RoleToCreate:
    targets = IamTargets("my-cluster", "my-models", region, bundle_uri=bundle_uri)
    (role,) = roles_to_create(TEMPLATE, targets)
    return role


def _resources(role: RoleToCreate) -> dict[str, str]:
    return {s["Sid"]: s["Resource"] for s in role.policy["Statement"]}


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("us-east-2", "aws"),
        ("cn-north-1", "aws-cn"),
        ("cn-northwest-1", "aws-cn"),
        ("us-gov-west-1", "aws-us-gov"),
        ("us-isob-east-1", "aws-iso-b"),
        ("eusc-de-east-1", "aws-eusc"),
    ],
)
def test_every_arn_of_a_role_is_in_the_regions_partition(region: str, partition: str) -> None:
    role = _role(region, bundle_uri="s3://my-assets/bundles/trnspec-bundle-0123.zip")
    assert _resources(role) == {
        "ReadModelsAndCompileCache": f"arn:{partition}:s3:::my-models/models/*",
        "ListOwnPrefixes": f"arn:{partition}:s3:::my-models",
        "DescribeCluster": f"arn:{partition}:eks:{region}:<ACCOUNT>:cluster/my-cluster",
        "ReadTrnspecBundle": f"arn:{partition}:s3:::my-assets/bundles/trnspec-bundle-0123.zip",
    }
    command = role.association_command("my-cluster", region, "111122223333")
    assert f"--role-arn arn:{partition}:iam::111122223333:role/trnspec-trnspec-serve" in command
    if partition != "aws":
        assert "arn:aws:" not in json.dumps(role.policy) + command


def test_the_bundle_statement_without_an_upload_names_the_stacks_asset_in_the_partition() -> None:
    """Without --upload-bundle the asset's own key stays, in the CDK assets bucket's place."""
    resource = _resources(_role("cn-north-1"))["ReadTrnspecBundle"]
    assert resource == f"arn:aws-cn:s3:::<bundle bucket (--upload-bundle)>/{BUNDLE_KEY}"
