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
    """Days a replaced or deleted compile-cache object is kept as a noncurrent version; current
    objects never expire."""


#: Lifecycle rule of the compile cache: only noncurrent versions expire.
COMPILE_CACHE_RULE_ID = "compile-cache-noncurrent-versions"


class ModelBucket(Construct):
    """KMS-encrypted, TLS-only, private, versioned bucket with an access-log bucket.

    Weights are large and slow to re-upload, so the bucket is retained on stack deletion.

    Nothing the deployment reads expires while it lives. S3 lifecycle `Expiration` counts days
    from an object's creation, not from its last read (S3 user guide, "Lifecycle configuration
    elements": S3 calculates the expiration time by adding the rule's days to the object
    creation time, rounded to the next midnight UTC), and a compile-cache entry is written once
    and then only read: a rule expiring it N days after creation deletes it while every cold
    start still needs it, and from day N each start compiles for tens of minutes. So the current
    version of a compile-cache object never expires. Entries are keyed by everything that shapes the
    compile (trnspec.staging.cache_key), so an entry no deployment reads any more is one of a
    config no longer served: remove its prefix by hand
    (`aws s3 rm --recursive s3://<bucket>/compile-cache/<key>/`); the delete leaves noncurrent
    versions, which expire after `compile_cache_retention_days`, as do versions a republish of
    a broken entry replaces.
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
                    id=COMPILE_CACHE_RULE_ID,
                    prefix=COMPILE_CACHE_PREFIX,
                    noncurrent_version_expiration=Duration.days(props.compile_cache_retention_days),
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
