"""cdk-nag AwsSolutions wiring, checkov skips, and every acknowledgement with its reason.

cdk-nag 3.x runs as a CDK validation plugin and matches acknowledgements by exact finding id
(`AwsSolutions-IAM5[Resource::<arn>]`). Rather than pasting ids, `acknowledge` walks the built
tree and acknowledges only findings of the kinds below, on the constructs named below; anything
else (a new wildcard, a new managed policy, a new construct) still fails synth.

checkov reads skips from each resource's CloudFormation metadata (`Metadata: checkov: skip:
[{id, comment}]`); `attach_nag` adds them, from `CHECKOV_SKIPS` only, to the constructs named
there, in every stack of the app. Any other finding fails tests/infra/compliance/test_checkov.py.
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Acknowledgment, App, Aspects, CfnResource, IAspect, Stack, Validations
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct
from trnspec.boundary import json_io

_PREFIX = "AwsSolutions::"

#: AWS managed policies we accept (AwsSolutions-IAM4), and why.
MANAGED_POLICIES: dict[str, str] = {
    "AmazonEKSClusterPolicy": "EKS requires it on the cluster role.",
    "AmazonEKSWorkerNodePolicy": "EKS worker nodes need it to join the cluster.",
    "AmazonEKS_CNI_Policy": "The VPC CNI on each node assigns pod IPs with it.",
    "AmazonEC2ContainerRegistryReadOnly": "Nodes pull ECR images with it.",
    "AmazonSSMManagedInstanceCore": "Session Manager access instead of SSH keys.",
    "AWSLambdaBasicExecutionRole": "CDK-provided handlers write their logs with it.",
    "AWSLambdaVPCAccessExecutionRole": "The kubectl handler runs in the VPC (private endpoint).",
    "AmazonElasticContainerRegistryPublicReadOnly": "kubectl handler pulls public OCI charts.",
}

#: Policies (by construct path fragment) whose wildcard resources (AwsSolutions-IAM5) we
#: accept, and why.
WILDCARD_OWNERS: dict[str, str] = {
    "/ClusterAutoscaler/PodIdentity/Role/": (
        "Describe* calls of EC2/Auto Scaling cannot be resource-scoped; Set/Terminate are "
        "limited by the k8s.io/cluster-autoscaler/<cluster>=owned tag condition; node groups "
        "are matched under this cluster only."
    ),
    "/Karpenter/ControllerIdentity/Role/": (
        "Karpenter's documented controller policy: instances, fleets, launch templates and "
        "instance profiles do not exist before it creates them (request-tag conditions scope "
        "creation, resource-tag conditions scope deletion); Describe*/pricing are unscopable."
    ),
    "/EbsCsi/Policy/": (
        "The EBS CSI driver's published policy: Describe* calls cannot be resource-scoped; "
        "volumes do not exist before it creates them (creation and deletion are bound to its "
        "ebs.csi.aws.com/cluster tag) and it attaches them to whichever node a pod lands on."
    ),
    "/LoadBalancerController/Policy/": (
        "The AWS Load Balancer Controller's published policy (NLB statements only): Describe* "
        "calls cannot be resource-scoped; load balancers, target groups and security groups do "
        "not exist before it creates them (request-tag conditions scope creation, resource-tag "
        "conditions scope changes and deletion)."
    ),
    "/NodeTemplateTags-": (
        "The node group's ASG name has an EKS-generated suffix: matched as eks-<nodegroup>-*."
    ),
    "/KubectlProvider/Provider/framework-onEvent/": (
        "CDK provider framework invokes versions of its own handler (<arn>:*)."
    ),
}

#: Rule-level acknowledgements on construct path fragments.
RULES_ON_PATHS: tuple[tuple[str, str, str], ...] = (
    (
        "AwsSolutions-EC23",
        "/Network/Vpc/",
        "Interface-endpoint security groups admit HTTPS from the VPC CIDR (an intrinsic cdk-nag "
        "cannot evaluate), never from the internet.",
    ),
    (
        "AwsSolutions-L1",
        "/KubectlProvider/Handler/",
        "The kubectl handler's Python runtime is fixed by aws-cdk-lib (it must match the "
        "kubectl layer's tooling) and moves with the library version.",
    ),
)


#: CDK's own Lambda handlers (custom-resource providers and the kubectl provider), by path.
_VPC_DEFAULT_SG_HANDLER = "/Custom::VpcRestrictDefaultSGCustomResourceProvider/"
_AWS_CUSTOM_RESOURCE_HANDLER = "/AWS679f53fac002430cb0da5b7982bd2287/"
_KUBECTL_HANDLER = "/KubectlProvider/Handler/"
_KUBECTL_ON_EVENT = "/KubectlProvider/Provider/framework-onEvent/"
_LAMBDA = "AWS::Lambda::Function"
_CDK_HANDLERS = (
    _VPC_DEFAULT_SG_HANDLER,
    _AWS_CUSTOM_RESOURCE_HANDLER,
    _KUBECTL_HANDLER,
    _KUBECTL_ON_EVENT,
)

#: checkov findings we accept: check id -> (reason, resource type, construct path fragments).
CHECKOV_SKIPS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "CKV_AWS_115": (
        "CDK's own deploy-time handler: CloudFormation invokes it a few times per deployment; "
        "reserved concurrency would only withhold capacity from the account's pool.",
        _LAMBDA,
        _CDK_HANDLERS,
    ),
    "CKV_AWS_116": (
        "Custom-resource handler: a failed event fails the CloudFormation operation, which "
        "reports it and rolls back; an event parked in a dead-letter queue could not be "
        "replayed (its pre-signed response URL expires), so nobody would read the queue.",
        _LAMBDA,
        _CDK_HANDLERS,
    ),
    "CKV_AWS_117": (
        "Calls only AWS APIs (EC2 default security group rules; EKS and Auto Scaling for the "
        "node-template tags), never the cluster; the kubectl handlers, which reach the cluster, "
        "run in the VPC.",
        _LAMBDA,
        (_VPC_DEFAULT_SG_HANDLER, _AWS_CUSTOM_RESOURCE_HANDLER),
    ),
    "CKV_AWS_173": (
        "The environment holds no secret (an STS endpoint mode, the handler function's ARN); "
        "Lambda already encrypts it at rest with an AWS managed key.",
        _LAMBDA,
        (_KUBECTL_HANDLER, _KUBECTL_ON_EVENT),
    ),
    "CKV_AWS_18": (
        "This is the model bucket's server-access-log bucket: logging it into itself would log "
        "its own log deliveries, and a third bucket would only move the finding. It is "
        "encrypted, blocks public access and refuses plain HTTP.",
        "AWS::S3::Bucket",
        ("/ModelBucket/AccessLogs/",),
    ),
}


def checkov_skips(resource_type: str, path: str) -> list[dict[str, str]]:
    """The checkov skips for a CloudFormation resource of this type at construct path `path`."""
    return [
        {"id": check, "comment": reason}
        for check, (reason, cfn_type, fragments) in CHECKOV_SKIPS.items()
        if cfn_type == resource_type and any(f in f"/{path}/" for f in fragments)
    ]


@jsii.implements(IAspect)
class _CheckovSkips:
    """Writes `Metadata: checkov: skip` on the resources CHECKOV_SKIPS names."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, CfnResource):
            skips = checkov_skips(node.cfn_resource_type, node.node.path)
            if skips:
                node.add_metadata("checkov", {"skip": skips})


def attach_nag(app: App) -> None:
    """Run AwsSolutions over every stack of `app` at synth, and mark checkov's accepted
    findings on every stack's resources."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    Aspects.of(app).add(_CheckovSkips())


def nag_string(value: Any) -> str:
    """Render a resolved value the way cdk-nag prints it in finding ids."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(nag_string(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        att = value["Fn::GetAtt"]
        return f"<{att[0]}.{att[1]}>"
    return json_io.strict(value, separators=(",", ":"))


def _ack(scope: IConstruct, finding: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=_PREFIX + finding, reason=reason))


def acknowledge(stack: Stack) -> list[str]:
    """Acknowledge the accepted findings of `stack` (call after every construct exists).

    Returns the finding ids acknowledged, for tests and reports.
    """
    done: list[str] = []
    for node in stack.node.find_all():
        path = f"/{node.node.path}/"
        if isinstance(node, iam.CfnRole):
            for arn in stack.resolve(node.managed_policy_arns) or []:
                text = nag_string(arn)
                for name, reason in MANAGED_POLICIES.items():
                    if text.endswith(f"/{name}") or f'/{name}"' in text:
                        finding = f"AwsSolutions-IAM4[Policy::{text}]"
                        _ack(node, finding, reason)
                        done.append(finding)
        if isinstance(node, iam.CfnPolicy):
            owner = next((r for frag, r in WILDCARD_OWNERS.items() if frag in path), None)
            if owner is None:
                continue
            doc = stack.resolve(node.policy_document)
            for statement in doc.get("Statement", []):
                resources = statement.get("Resource", [])
                for res in resources if isinstance(resources, list) else [resources]:
                    text = nag_string(res)
                    if "*" in text:
                        finding = f"AwsSolutions-IAM5[Resource::{text}]"
                        _ack(node, finding, owner)
                        done.append(finding)
        if isinstance(node, CfnResource):
            for rule, fragment, reason in RULES_ON_PATHS:
                if fragment in path:
                    _ack(node, rule, reason)
                    done.append(rule)
    return sorted(set(done))
