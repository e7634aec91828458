"""Customer-managed KMS keys: every key the stacks create rotates yearly (cdk-nag
AwsSolutions-KMS5, checkov CKV_AWS_7) and says what it encrypts."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from constructs import Construct


def rotating_key(
    scope: Construct,
    construct_id: str,
    description: str,
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
) -> kms.Key:
    """A KMS key with yearly rotation; destroyed with its stack unless `removal_policy` keeps it
    (a key whose data outlives the stack, such as the model bucket's, must be retained)."""
    return kms.Key(
        scope,
        construct_id,
        description=description,
        enable_key_rotation=True,
        removal_policy=removal_policy,
    )
