"""The names of the stacks' CloudFormation outputs: one definition, for the stacks and the tools.

The stacks declare their `CfnOutput`s with these names and the tools' `stack_endpoint` looks the
same names up with `DescribeStacks`, so a renamed output cannot leave the tools reading a key that
no longer exists (`tests/infra/test_outputs.py` checks the synthesized templates against this
module, and `test_stack_endpoint.py` checks the tools against the same names).
"""

from __future__ import annotations

from typing import Final


class PlatformOutputs:
    """Outputs of the platform stack (`TrnspecPlatform`)."""

    CLUSTER_NAME: Final = "ClusterName"
    UPDATE_KUBECONFIG_COMMAND: Final = "UpdateKubeconfigCommand"
    NODEGROUP_NAMES: Final = "NodegroupNames"


class ServingOutputs:
    """Outputs of the serving stack (`<platform stack>-serving`): with `--stack` naming this
    stack, what a tool on an operator's machine needs to reach the service (the cluster itself
    comes from the platform stack's outputs: an output re-exporting an imported value is what
    cfn-lint W6001 warns against)."""

    PLATFORM_STACK: Final = "PlatformStack"
    """The stack of the cluster: its `ClusterName` and `UpdateKubeconfigCommand` outputs."""
    REGION: Final = "Region"
    """The region of the cluster and of both stacks."""
    NAMESPACE: Final = "ServiceNamespace"
    SERVICE_NAME: Final = "ServiceName"
    """The ClusterIP Service in front of the serving pods (its selector picks the pods)."""
    SERVICE_PORT: Final = "ServicePort"
    """The Service port (the tools resolve its targetPort on the pod for a port-forward)."""
    IN_CLUSTER_ENDPOINT: Final = "ServiceEndpoint"
    """The URL inside the cluster only (cluster DNS): not reachable from an operator's machine."""
    WAKE_ENDPOINT: Final = "WakeEndpoint"
    """The wake Service's URL inside the cluster (the KEDA HTTP add-on's interceptor, whose route
    matches its host); only with `serving.scale_to_zero`, where the Service of
    IN_CLUSTER_ENDPOINT has no endpoint at zero replicas and a request to it wakes nothing."""
    INTERNAL_NLB_ENDPOINT: Final = "InternalNlbEndpoint"
    """The URL on the internal NLB; only with `serving.internal_nlb: true`."""
    MODEL_BUCKET_NAME: Final = "ModelBucketName"
    MODELS_URI: Final = "ModelsUri"
    IMAGE_URI: Final = "ImageUri"
    PRECOMPILE_JOB: Final = "PrecompileJob"
    """namespace/name of the precompile Job; not on a one-chip trn2.3xlarge, where the replica
    compiles itself."""
    API_KEY_SECRET_ARN: Final = "ApiKeySecretArn"
    """The Secrets Manager secret holding the API key; only when the key is enabled."""
    HF_TOKEN_SECRET_ARN: Final = "HfTokenSecretArn"
    """The Secrets Manager secret for a Hugging Face token (created empty)."""
    DEPLOY_CONTEXT: Final = "DeployContext"
    """The deploy's `-c profile=... -c KEY=VALUE ...` items (shell-quoted), but the plan's and
    the calibration's: what the next `cdk deploy` of this deployment repeats. Only when the
    app read a profile (infra.settings.deploy_context)."""
    PLAN_COMMAND: Final = "PlanCommand"
    """The deployed plan file's `plan.command` (the plan-deploy that wrote it); only with a plan
    that records one."""
    WEIGHTS_JOB: Final = "WeightsJob"
    """namespace/name of the Job copying the models from the Hub; only when there are any."""


def update_kubeconfig_command(cluster_name: str, region: str) -> str:
    """The command the kubeconfig output prints (tokens allowed: it is formatted at synth)."""
    return f"aws eks update-kubeconfig --name {cluster_name} --region {region}"
