"""The serving stack: model bucket, trnspec bundle, pod identities and the workload on the platform
cluster.

A separate stack rather than constructs inside the platform stack, because:
- the workload changes often (profile, k, replicas, image, bundle) and the cluster rarely; a
  separate stack deploys and rolls back without CloudFormation touching the cluster or its node
  groups;
- the snapshot, nag and cfn-lint tests of the platform stay independent of serving choices.
The cost is cross-stack references (cluster name, kubectl provider) exported by the platform stack,
so that stack must be deployed first (`add_serving` declares the dependency).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Acknowledgment as Ack
from aws_cdk import (
    Aws,
    CfnOutput,
    CfnResource,
    Environment,
    Stack,
    Token,
    Validations,
)
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.contracts import COMPILE_CACHE_PREFIX, KEDA_HTTP_PROXY_PORT, MODELS_PREFIX
from infra.outputs import PlatformOutputs, ServingOutputs, update_kubeconfig_command
from infra.platform.cluster.existing import ExistingCluster, ExistingClusterProps
from infra.serving.api_key import ApiKeySecret, ApiKeySecretProps
from infra.serving.bucket import ModelBucket, ModelBucketProps
from infra.serving.bundle.archive import REPO_DIR
from infra.serving.bundle.asset import ServingBundle, ServingBundleProps
from infra.serving.calibration_identity import CALIBRATION_PREFIX, calibration_statements
from infra.serving.identity import (
    ServingIdentity,
    ServingIdentityProps,
    compile_statements,
    serve_statements,
    weights_statements,
)
from infra.serving.image import base_image_reference
from infra.serving.manifests.calibration import service_account_name_for_calibration
from infra.serving.manifests.placeholders import DeployValues, bind
from infra.serving.manifests.pod import (
    PRECOMPILE_COMPONENT,
    SERVE_COMPONENT,
    WEIGHTS_COMPONENT,
    service_account_name,
)
from infra.serving.manifests.precompile import precompile_job_name, precompile_job_wanted
from infra.serving.manifests.service import SERVICE_PORT, nlb_service_name
from infra.serving.manifests.wake import wake_hosts
from infra.serving.manifests.weights import weights_job_name
from infra.serving.preflight import WorkloadPreflight
from infra.serving.workload import ServingWorkload, ServingWorkloadProps
from infra.settings.deploy_context import DeployContext


class ServingStack(Stack):
    """One serving profile on an existing cluster (read-only attributes: spec, model_bucket,
    image_uri, bundle, api_key, hf_token, serve_identity, compile_identity, weights_identity,
    workload, serving_config, settings).

    Takes the workload as the preflight derived it (engine config, spec and manifests, the
    weights Job's included, checked before any construct: infra/serving/preflight.py) and binds
    this stack's bucket, image, bundle, region, VPC CIDR, API key and Hugging Face token secret
    into them; nothing is resolved or derived again here. The image is the profile's public
    Neuron image as published; trnspec reaches the pods as the bundle (a file asset of
    `bundle_root`'s packages) that an init container installs (infra/serving/manifests/bundle.py).

    The cluster is the platform stack's (`cluster`), or, with `existing`, an EKS cluster made
    elsewhere that this stack imports with a kubectl provider of its own
    (infra/platform/cluster/existing.py; `existing_cluster`), whose VPC CIDR is then `vpc_cidr`.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        preflight: WorkloadPreflight,
        cluster: eks.ICluster | None = None,
        existing: ExistingClusterProps | None = None,
        vpc_cidr: str | None = None,
        bundle_root: Path = REPO_DIR,
        deploy: DeployContext | None = None,
        **kwargs: Any,
    ) -> None:
        settings, cfg = preflight.settings, preflight.config
        kwargs.setdefault("description", f"trnspec serving workload ({settings.profile})")
        if (cluster is None) == (existing is None) or (existing is not None and not vpc_cidr):
            raise ValueError("ServingStack takes a cluster, or existing= with its vpc_cidr")
        super().__init__(scope, id, **kwargs)
        self.settings = settings
        self.deploy = deploy
        self.serving_config = cfg
        self.existing_cluster: ExistingCluster | None = None
        if existing is not None:
            self.existing_cluster = ExistingCluster(self, "Cluster", existing)
            cluster = self.existing_cluster.cluster
        assert cluster is not None

        self.model_bucket = ModelBucket(
            self,
            "ModelBucket",
            ModelBucketProps(compile_cache_retention_days=settings.compile_cache_retention_days),
        )
        bucket = self.model_bucket.bucket
        self.image_uri = base_image_reference(cfg.image)
        self.bundle = ServingBundle(self, "Bundle", ServingBundleProps(repo_dir=bundle_root))
        self.api_key, self.hf_token = self._secrets()

        values = DeployValues(
            bucket_name=bucket.bucket_name,
            image_uri=self.image_uri,
            region=Aws.REGION,
            vpc_cidr=vpc_cidr or cluster.vpc.vpc_cidr_block,
            api_key_secret_arn=self.api_key.secret_arn if self.api_key else None,
            hf_token_secret_arn=self.hf_token.secret_arn,
            bundle_uri=self.bundle.uri,
            bundle_sha256=self.bundle.sha256,
        )
        self.spec = bind(preflight.spec, values)
        manifests = bind(preflight.manifests, values)

        self.workload = ServingWorkload(
            self,
            "Workload",
            ServingWorkloadProps(
                cluster=cluster, manifests=manifests, service_accounts=self._identities(cluster)
            ),
        )
        if self.existing_cluster is not None:
            # Every kubectl call waits for the provider's access to the cluster (the namespace
            # comes first; everything else the stack applies waits for it).
            self.workload.namespace.node.add_dependency(self.existing_cluster.ready)
        self._outputs(cluster)
        self._acknowledge()

    def _secrets(self) -> tuple[ApiKeySecret | None, ApiKeySecret]:
        """The API key, when on (docs/workload.md, "Security"): generated into Secrets Manager,
        read by the serving pods at start; only its ARN reaches the manifests. The Hugging Face
        token for gated models: created empty (no value in any template); the operator puts the
        token in it, the weights Job reads it at run time."""
        profile = self.settings.profile
        api_key = (
            ApiKeySecret(self, "ApiKey", ApiKeySecretProps(f"trnspec API key ({profile})"))
            if self.settings.api_key_enabled
            else None
        )
        hf_token = ApiKeySecret(
            self,
            "HfToken",
            ApiKeySecretProps(
                f"trnspec Hugging Face token ({profile}): put a token here for a "
                "gated model, then rerun the weights Job",
                generated=False,
                label="HfToken",
            ),
        )
        return api_key, hf_token

    def _identities(self, cluster: eks.ICluster) -> tuple[ServingIdentity, ...]:
        """One service account per component (serve, precompile, weights), each bound to a role
        with exactly what that component does with the bucket, its key and the secrets; every
        one of them runs trnspec, so each also reads the bundle's object (and nothing else of
        the assets bucket)."""
        bucket, key = self.model_bucket.bucket, self.model_bucket.key
        bundle = [self.bundle.read_statement()]
        self.serve_identity = self._identity(
            cluster,
            "ServeIdentity",
            SERVE_COMPONENT,
            [*serve_statements(bucket, key, self.api_key), *bundle],
        )
        self.compile_identity = self._identity(
            cluster,
            "CompileIdentity",
            PRECOMPILE_COMPONENT,
            [*compile_statements(bucket, key), *bundle],
        )
        self.weights_identity = self._identity(
            cluster,
            "WeightsIdentity",
            WEIGHTS_COMPONENT,
            [*weights_statements(bucket, key, self.hf_token), *bundle],
        )
        identities = (self.serve_identity, self.compile_identity, self.weights_identity)
        if self.settings.calibration is not None:  # the calibration Job (serving.calibration)
            self.calibration_identity = ServingIdentity(
                self,
                "CalibrationIdentity",
                ServingIdentityProps(
                    cluster=cluster,
                    name=service_account_name_for_calibration(self.spec),
                    namespace=self.settings.namespace,
                    statements=(
                        *calibration_statements(
                            bucket, key, self.settings.calibration, self.api_key
                        ),
                        *bundle,
                    ),
                ),
            )
            identities += (self.calibration_identity,)
        return identities

    def _identity(
        self,
        cluster: eks.ICluster,
        construct_id: str,
        component: str,
        statements: list[iam.PolicyStatement],
    ) -> ServingIdentity:
        """The service account of one component, bound to a role with exactly `statements`."""
        return ServingIdentity(
            self,
            construct_id,
            ServingIdentityProps(
                cluster=cluster,
                name=service_account_name(self.spec, component),
                namespace=self.settings.namespace,
                statements=tuple(statements),
            ),
        )

    def _outputs(self, cluster: eks.ICluster) -> None:
        """The outputs, in template order: cluster, service, endpoints, jobs, deploy, NLB."""
        self._cluster_outputs(cluster)
        self._service_outputs()
        self._endpoint_outputs()
        self._job_outputs()
        self._deploy_outputs()
        if self.settings.internal_nlb:
            self._internal_nlb_output(cluster)

    def _cluster_outputs(self, cluster: eks.ICluster) -> None:
        """What the tools' stack_endpoint needs to reach the service from outside the cluster."""
        CfnOutput(self, ServingOutputs.PLATFORM_STACK, value=Stack.of(cluster).stack_name)
        if self.existing_cluster is not None:
            # No platform stack: this stack is the one whose outputs name the cluster.
            CfnOutput(self, PlatformOutputs.CLUSTER_NAME, value=cluster.cluster_name)
            CfnOutput(
                self,
                PlatformOutputs.UPDATE_KUBECONFIG_COMMAND,
                value=update_kubeconfig_command(cluster.cluster_name, Aws.REGION),
            )
        CfnOutput(self, ServingOutputs.REGION, value=Aws.REGION)

    def _service_outputs(self) -> None:
        """The service's name and port, where its weights and image live, and its API key."""
        spec = self.spec
        CfnOutput(self, ServingOutputs.NAMESPACE, value=spec.namespace)
        CfnOutput(self, ServingOutputs.SERVICE_NAME, value=spec.name)
        CfnOutput(self, ServingOutputs.SERVICE_PORT, value=str(SERVICE_PORT))
        CfnOutput(
            self, ServingOutputs.MODEL_BUCKET_NAME, value=self.model_bucket.bucket.bucket_name
        )
        CfnOutput(
            self,
            ServingOutputs.MODELS_URI,
            value=f"s3://{self.model_bucket.bucket.bucket_name}/{MODELS_PREFIX}",
            description="Upload weights to <this><served model name>/",
        )
        CfnOutput(self, ServingOutputs.IMAGE_URI, value=self.image_uri)
        if self.api_key is not None:
            CfnOutput(
                self,
                ServingOutputs.API_KEY_SECRET_ARN,
                value=self.api_key.secret_arn,
                description="aws secretsmanager get-secret-value --secret-id <this> (the key)",
            )

    def _endpoint_outputs(self) -> None:
        """The in-cluster endpoint and, with scale to zero, the address that wakes it."""
        spec = self.spec
        CfnOutput(
            self,
            ServingOutputs.IN_CLUSTER_ENDPOINT,
            value=f"http://{spec.name}.{spec.namespace}.svc.cluster.local:{SERVICE_PORT}",
            description=(
                "OpenAI-compatible endpoint inside the cluster only (no endpoint at zero "
                "replicas: with scale to zero, call WakeEndpoint); from outside use "
                "scripts/smoke.py --stack (port-forward over the Kubernetes API)"
            ),
        )
        if self.settings.scale_to_zero:
            CfnOutput(
                self,
                ServingOutputs.WAKE_ENDPOINT,
                value=f"http://{wake_hosts(spec)[0]}:{KEDA_HTTP_PROXY_PORT}",
                description=(
                    "the address that wakes the workload from zero replicas (inside the "
                    "cluster; smoke.py --stack sends through it: docs/platform.md)"
                ),
            )

    def _job_outputs(self) -> None:
        """The Hub token secret and the weights and precompile Jobs that fill bucket and cache."""
        spec = self.spec
        CfnOutput(
            self,
            ServingOutputs.HF_TOKEN_SECRET_ARN,
            value=self.hf_token.secret_arn,
            description="Created empty; for a gated model: aws secretsmanager put-secret-value "
            "--secret-id <this> --secret-string hf_... (docs/platform.md, 'First deploy')",
        )
        if spec.hub_copies:
            CfnOutput(
                self,
                ServingOutputs.WEIGHTS_JOB,
                value=f"{spec.namespace}/{weights_job_name(spec, self.settings.weights_rerun)}",
                description="Job that copies the models from the Hugging Face Hub to the bucket",
            )
        if precompile_job_wanted(spec):
            CfnOutput(
                self,
                ServingOutputs.PRECOMPILE_JOB,
                value=f"{spec.namespace}/{precompile_job_name(spec)}",
                description="Job that fills the compile cache (docs/workload.md)",
            )

    def _deploy_outputs(self) -> None:
        """The -c items and the plan-deploy command of this deploy, when it came from a plan."""
        if self.deploy is None:
            return
        CfnOutput(
            self,
            ServingOutputs.DEPLOY_CONTEXT,
            value=self.deploy.output_text(),
            description="the -c items of this deploy, for the next one (calibrate fetch)",
        )
        if self.deploy.plan_command is not None:
            CfnOutput(
                self,
                ServingOutputs.PLAN_COMMAND,
                value=self.deploy.plan_command,
                description="the plan-deploy command of the plan deployed",
            )

    def _internal_nlb_output(self, cluster: eks.ICluster) -> None:
        """The internal NLB's endpoint, read from the Service's status once the workload exists."""
        hostname = eks.KubernetesObjectValue(
            self,
            "NlbHostname",
            cluster=cluster,
            object_type="service",
            object_name=nlb_service_name(self.spec),
            object_namespace=self.spec.namespace,
            json_path=".status.loadBalancer.ingress[0].hostname",
        )
        hostname.node.add_dependency(self.workload.core)
        CfnOutput(
            self,
            ServingOutputs.INTERNAL_NLB_ENDPOINT,
            value=f"http://{hostname.value}:{SERVICE_PORT}",
            description="OpenAI-compatible endpoint on the internal NLB (inside the VPC)",
        )

    def _acknowledge(self) -> None:
        """cdk-nag findings that are the design, each acknowledged by its exact finding id."""
        if self.api_key is not None:
            Validations.of(self.api_key.secret).acknowledge(
                Ack(
                    id="AwsSolutions::AwsSolutions-SMG4",
                    reason="rotated by the operator (docs/workload.md): vLLM takes one key and "
                    "reads it at start, so rotation is a planned restart, not a Lambda",
                )
            )
        Validations.of(self.hf_token.secret).acknowledge(
            Ack(
                id="AwsSolutions::AwsSolutions-SMG4",
                reason="a Hugging Face token is issued by huggingface.co, not by AWS: the "
                "operator replaces it there and puts the new one here (docs/platform.md)",
            )
        )
        bucket = self.model_bucket.bucket.node.default_child
        assert isinstance(bucket, CfnResource)
        arn = f"<{self.get_logical_id(bucket)}.Arn>"
        calibration = (CALIBRATION_PREFIX,) if self.settings.calibration is not None else ()
        for prefix in (MODELS_PREFIX, COMPILE_CACHE_PREFIX, *calibration):
            Validations.of(self).acknowledge(
                Ack(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{arn}/{prefix}*]",
                    reason=(
                        f"objects under '{prefix}' only: the prefix is the permission boundary "
                        "(s3:ListBucket is limited to the same prefixes by an s3:prefix condition)"
                    ),
                )
            )


def add_serving(
    scope: Construct,
    platform_stack: Stack,
    preflight: WorkloadPreflight,
    deploy: DeployContext | None = None,
) -> ServingStack:
    """Compose the serving stack on the platform stack's cluster (same env, deployed after it).

    `platform_stack` must expose `cluster` (aws_eks_v2 cluster with a kubectl provider) and
    install the controllers the workload uses (infra/platform/addons); `preflight` is the workload
    already checked and derived (infra/serving/preflight.py).
    """
    cluster: eks.ICluster = platform_stack.cluster  # type: ignore[attr-defined]
    # Same environment as the platform (cross-stack references need it), including the partial
    # one of a region-pinned profile whose account is left to deploy time.
    account = None if Token.is_unresolved(platform_stack.account) else platform_stack.account
    region = None if Token.is_unresolved(platform_stack.region) else platform_stack.region
    env = Environment(account=account, region=region) if (account or region) else None
    stack = ServingStack(
        scope,
        serving_stack_name(platform_stack.stack_name),
        cluster=cluster,
        preflight=preflight,
        env=env,
        deploy=deploy,
    )
    stack.add_stack_dependency(platform_stack)
    return stack


def serving_stack_name(platform_stack_name: str) -> str:
    """The serving stack's name: the platform stack's plus `-serving` (the tools' convention),
    also when there is no platform stack (an existing cluster)."""
    return f"{platform_stack_name}-serving"


def add_serving_on_existing(
    scope: Construct,
    stack_name: str,
    preflight: WorkloadPreflight,
    existing: ExistingClusterProps,
    vpc_cidr: str,
    env: Environment | None = None,
    deploy: DeployContext | None = None,
) -> ServingStack:
    """The serving stack alone, on an EKS cluster made elsewhere (docs/platform.md, "Existing
    cluster"): no platform stack to follow, the cluster imported inside this stack."""
    return ServingStack(
        scope,
        stack_name,
        preflight=preflight,
        existing=existing,
        vpc_cidr=vpc_cidr,
        env=env,
        deploy=deploy,
    )
