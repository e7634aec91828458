"""Pod identities of the serving workload: one role to serve, one to compile.

EKS Pod Identity (not IRSA): the trust policy names the `pods.eks.amazonaws.com` service instead
of the cluster's OIDC issuer, so the roles need no per-cluster OIDC provider and the association
is a plain CloudFormation resource.

Least privilege, by prefix:
- serve role: read models/, read and write compile-cache/ only: it starts from the cache, and a
  pod that had to compile (a changed config, an arm the precompile Job does not cover, a broken
  entry) publishes its compile there once it answers (trnspec.serve.runner.CachePublisher), so
  the next start of any pod finds it;
- compile role: read models/, read and write compile-cache/ only;
- weights role (the Hub copy): read and write models/ only, and read the Hub token secret;
- neither may list, read or write anything else in the bucket, and KMS use is limited to S3
  calls for this bucket's key.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.contracts import COMPILE_CACHE_PREFIX, MODELS_PREFIX
from infra.platform.cluster.pod_identity import PodIdentityRole, PodIdentityRoleProps
from infra.serving.api_key import ApiKeySecret
from infra.serving.manifests.service_account import service_account

READ_OBJECT_ACTIONS = ["s3:GetObject", "s3:GetObjectVersion"]
#: DeleteObject lets the engine replace a corrupt cache entry (trnspec.staging.transfer); the
#: bucket is versioned, so a delete is recoverable.
WRITE_OBJECT_ACTIONS = [
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
]


def _list_statement(bucket: s3.IBucket, prefixes: list[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="ListOwnPrefixes",
        actions=["s3:ListBucket"],
        resources=[bucket.bucket_arn],
        conditions={"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}},
    )


def _read_statement(bucket: s3.IBucket) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="ReadModelsAndCompileCache",
        actions=READ_OBJECT_ACTIONS,
        resources=[
            bucket.arn_for_objects(f"{MODELS_PREFIX}*"),
            bucket.arn_for_objects(f"{COMPILE_CACHE_PREFIX}*"),
        ],
    )


def _kms_statement(key: kms.IKey, actions: list[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="BucketKeyViaS3",
        actions=actions,
        resources=[key.key_arn],
        conditions={"StringEquals": {"kms:ViaService": f"s3.{Aws.REGION}.amazonaws.com"}},
    )


def _write_compile_cache_statement(bucket: s3.IBucket) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="WriteCompileCacheOnly",
        actions=WRITE_OBJECT_ACTIONS,
        resources=[bucket.arn_for_objects(f"{COMPILE_CACHE_PREFIX}*")],
    )


def serve_statements(
    bucket: s3.IBucket, key: kms.IKey, api_key: ApiKeySecret | None = None
) -> list[iam.PolicyStatement]:
    """Read the models, read and refill the compile cache; with the API key on, also read its
    secret (the compile role gets no such grant: nothing can reach the precompile pod's vLLM)."""
    return [
        _read_statement(bucket),
        _write_compile_cache_statement(bucket),
        _list_statement(bucket, [MODELS_PREFIX, COMPILE_CACHE_PREFIX]),
        _kms_statement(key, ["kms:Decrypt", "kms:GenerateDataKey"]),
        *(api_key.read_statements() if api_key is not None else []),
    ]


def compile_statements(bucket: s3.IBucket, key: kms.IKey) -> list[iam.PolicyStatement]:
    return [
        _read_statement(bucket),
        _write_compile_cache_statement(bucket),
        _list_statement(bucket, [MODELS_PREFIX, COMPILE_CACHE_PREFIX]),
        _kms_statement(key, ["kms:Decrypt", "kms:GenerateDataKey"]),
    ]


def weights_statements(
    bucket: s3.IBucket, key: kms.IKey, hf_token: ApiKeySecret
) -> list[iam.PolicyStatement]:
    """Publish under models/ (the upload reads back and replaces its manifest) and read the
    Hub token; nothing under compile-cache/."""
    return [
        iam.PolicyStatement(
            sid="ReadWriteModelsOnly",
            actions=[*READ_OBJECT_ACTIONS, *WRITE_OBJECT_ACTIONS],
            resources=[bucket.arn_for_objects(f"{MODELS_PREFIX}*")],
        ),
        _list_statement(bucket, [MODELS_PREFIX]),
        _kms_statement(key, ["kms:Decrypt", "kms:GenerateDataKey"]),
        *hf_token.read_statements(),
    ]


@dataclass(frozen=True)
class ServingIdentityProps:
    """Inputs of one workload service account and its role."""

    cluster: eks.ICluster
    """Cluster to create the service account on."""
    name: str
    """Service account name."""
    namespace: str
    """Its namespace."""
    statements: tuple[iam.PolicyStatement, ...]
    """The role's whole policy."""


class ServingIdentity(Construct):
    """A Kubernetes service account bound to an IAM role through EKS Pod Identity.

    Built from its parts (role, PodIdentityAssociation, ServiceAccount manifest) rather than
    with aws_eks_v2.ServiceAccount: that construct also adds an `eks-pod-identity-agent` add-on
    to the cluster's stack, which the platform stack already installs (two add-ons of one name
    fail the deployment). The policy is explicit, not bucket grants, whose `s3:List*` on the
    whole bucket would reach past the prefixes. The EKS Pod Identity agent must run on the
    cluster (the platform installs it).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        props: ServingIdentityProps,
    ) -> None:
        super().__init__(scope, id)
        cluster, name, namespace = props.cluster, props.name, props.namespace
        self.service_account_name = name
        self.identity = PodIdentityRole(
            self,
            "PodIdentity",
            PodIdentityRoleProps(
                cluster=cluster,
                namespace=namespace,
                service_account=name,
                description=f"EKS Pod Identity role of {namespace}/{name}",
            ),
        )
        self.role = self.identity.role
        self.association = self.identity.association
        self.policy = iam.Policy(
            self, "Policy", statements=list(props.statements), roles=[self.role]
        )
        self.manifest = eks.KubernetesManifest(
            self,
            "ServiceAccount",
            cluster=cluster,
            manifest=[service_account(name, namespace)],
        )
