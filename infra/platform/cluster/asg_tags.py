"""Copies node-template tags onto a managed node group's Auto Scaling group.

EKS keeps node group tags off the ASG it creates, yet the Cluster Autoscaler reads the ASG's
tags to imagine a node of an empty group: without them a Trn2 group at zero never scales up.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct


@dataclass(frozen=True)
class AsgNodeTemplateTagsProps:
    """Which node group's ASG gets which tags."""

    cluster_name: str
    """Literal EKS cluster name."""
    nodegroup_name: str
    """Literal managed node group name (its ASG is eks-<name>-<uuid>)."""
    tags: dict[str, str]
    """Tags to put on the ASG (not propagated to instances)."""


class AsgNodeTemplateTags(Construct):
    """Looks the ASG up (eks:DescribeNodegroup) and tags it (autoscaling:CreateOrUpdateTags)."""

    def __init__(
        self, scope: Construct, construct_id: str, props: AsgNodeTemplateTagsProps
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        ng_arn = stack.format_arn(
            service="eks",
            resource="nodegroup",
            resource_name=f"{props.cluster_name}/{props.nodegroup_name}/*",
        )
        lookup = cr.AwsCustomResource(
            self,
            "FindAsg",
            on_update=cr.AwsSdkCall(
                service="EKS",
                action="describeNodegroup",
                parameters={
                    "clusterName": props.cluster_name,
                    "nodegroupName": props.nodegroup_name,
                },
                physical_resource_id=cr.PhysicalResourceId.of(props.nodegroup_name),
                output_paths=["nodegroup.resources.autoScalingGroups.0.name"],
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["eks:DescribeNodegroup"], resources=[ng_arn])]
            ),
            install_latest_aws_sdk=False,
        )
        asg_name = lookup.get_response_field("nodegroup.resources.autoScalingGroups.0.name")
        asg_arn = stack.format_arn(
            service="autoscaling",
            resource="autoScalingGroup",
            resource_name=f"*:autoScalingGroupName/eks-{props.nodegroup_name}-*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.tagger = cr.AwsCustomResource(
            self,
            "TagAsg",
            on_update=cr.AwsSdkCall(
                service="AutoScaling",
                action="createOrUpdateTags",
                parameters={
                    "Tags": [
                        {
                            "ResourceId": asg_name,
                            "ResourceType": "auto-scaling-group",
                            "Key": k,
                            "Value": v,
                            "PropagateAtLaunch": False,
                        }
                        for k, v in sorted(props.tags.items())
                    ]
                },
                physical_resource_id=cr.PhysicalResourceId.of(f"{props.nodegroup_name}-tags"),
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["autoscaling:CreateOrUpdateTags"], resources=[asg_arn]
                    )
                ]
            ),
            install_latest_aws_sdk=False,
        )
