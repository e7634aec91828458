"""AWS Load Balancer Controller: provisions the workload's internal NLB (`serving.internal_nlb`).

Installed only when a workload asks for the NLB. Its role is the controller's published policy
restricted to what an NLB for a Service needs (`iam/aws_load_balancer_controller.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.platform.addons.addon import Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.aws_load_balancer_controller.iam import controller_statements
from infra.platform.addons.controller import KUBE_SYSTEM, ControllerChartProps, controller_chart
from infra.platform.addons.helm import HelmReleaseProps
from infra.platform.addons.pins import AWS_LOAD_BALANCER_CONTROLLER_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import DeploymentSettings

SERVICE_ACCOUNT = "aws-load-balancer-controller"


@dataclass(frozen=True)
class LoadBalancerControllerProps:
    """Inputs of the controller."""

    cluster: eks.Cluster
    """Cluster to install into."""
    cluster_name: str
    """Literal cluster name (the chart's clusterName)."""
    vpc: ec2.IVpc
    """The cluster's VPC (set explicitly: no instance-metadata lookup)."""
    node_selector: dict[str, str]
    """Where the controller runs (the system nodes)."""
    timeout_minutes: int
    """How long the deploy waits for the controller to be ready."""


def controller_values(props: LoadBalancerControllerProps, region: str) -> dict[str, Any]:
    return {
        "clusterName": props.cluster_name,
        # Region and VPC explicit: the controller would otherwise ask instance metadata.
        "region": region,
        "vpcId": props.vpc.vpc_id,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(props.node_selector),
        "replicaCount": 2,
    }


class LoadBalancerController(Construct):
    """Chart plus Pod Identity role (attributes: `chart`, `identity`)."""

    def __init__(
        self, scope: Construct, construct_id: str, props: LoadBalancerControllerProps
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        controller = controller_chart(
            self,
            ControllerChartProps(
                release=HelmReleaseProps(
                    cluster=props.cluster,
                    pin=AWS_LOAD_BALANCER_CONTROLLER_CHART,
                    release="aws-load-balancer-controller",
                    namespace=KUBE_SYSTEM,
                    values=controller_values(props, stack.region),
                    timeout_minutes=props.timeout_minutes,
                ),
                service_account=SERVICE_ACCOUNT,
                description="AWS Load Balancer Controller (Pod Identity)",
                statements=controller_statements(stack),
                # A policy of its own: the published policy is long, and the chart waits for it.
                policy_id="Policy",
            ),
        )
        self.identity, self.chart, self.policy = (
            controller.identity,
            controller.chart,
            controller.policy,
        )


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """When the workload exposes an internal NLB (`serving.internal_nlb`)."""
    return needs.load_balancer_controller


def build(scope: AddonScope) -> LoadBalancerController:
    """The controller on the system nodes, for the cluster's VPC."""
    props = LoadBalancerControllerProps(
        cluster=scope.cluster,
        cluster_name=scope.settings.cluster_name,
        vpc=scope.vpc,
        node_selector=dict(SYSTEM_LABEL),
        timeout_minutes=scope.timeout_minutes,
    )
    return LoadBalancerController(scope.stack, "LoadBalancerController", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="aws_load_balancer_controller", installed=installed, build=build)
