"""The model bucket: weights under models/, compiled Neuron artifacts under compile-cache/."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.compliance.keys import rotating_key
from infra.contracts import COMPILE_CACHE_PREFIX, MODELS_PREFIX


@dataclass(frozen=True)
class ModelBucketProps:
    """Inputs of the model bucket."""

    compile_cache_retention_days: int
    """Days after which an unrewritten object under the compile cache expires."""


class ModelBucket(Construct):
    """KMS-encrypted, TLS-only, private, versioned bucket with an access-log bucket.

    Weights are large and slow to re-upload, so the bucket is retained on stack deletion.
    Compiled artifacts are cheap to rebuild but expensive to store forever: anything under the
    compile cache that has not been rewritten for `compile_cache_retention_days` expires, and
    superseded versions go after a week.
    """

    def __init__(self, scope: Construct, id: str, props: ModelBucketProps) -> None:
        super().__init__(scope, id)
        self.key = rotating_key(
            self,
            "Key",
            "trnspec model bucket (weights and compiled Neuron artifacts)",
            removal_policy=RemovalPolicy.RETAIN,
        )
        # S3 server access logs can only be delivered to an SSE-S3 bucket.
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=Duration.days(365))],
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="model-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-stale-compile-cache",
                    prefix=COMPILE_CACHE_PREFIX,
                    expiration=Duration.days(props.compile_cache_retention_days),
                    noncurrent_version_expiration=Duration.days(7),
                ),
                s3.LifecycleRule(
                    id="models-noncurrent-versions",
                    prefix=MODELS_PREFIX,
                    noncurrent_version_expiration=Duration.days(30),
                ),
                s3.LifecycleRule(
                    id="abort-incomplete-uploads",
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
            ],
        )
