"""AWS Load Balancer Controller: provisions the workload's internal NLB (`serving.internal_nlb`).

Installed only when a workload asks for the NLB. Its role is the controller's published policy
restricted to what an NLB for a Service needs (`iam.py`).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack

from infra.platform.addons.addon import Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.aws_load_balancer_controller.iam import controller_statements
from infra.platform.addons.controller import (
    KUBE_SYSTEM,
    ControllerAddon,
    ControllerChartProps,
    ControllerIdentity,
)
from infra.platform.addons.pins import AWS_LOAD_BALANCER_CONTROLLER_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import DeploymentSettings

SERVICE_ACCOUNT = "aws-load-balancer-controller"
#: A policy of its own: the published policy is long, and the chart waits for it.
IDENTITY = ControllerIdentity(
    SERVICE_ACCOUNT, "AWS Load Balancer Controller (Pod Identity)", policy_id="Policy"
)


def controller_values(cluster_name: str, vpc_id: str, region: str) -> dict[str, Any]:
    """The chart's values: this cluster and VPC, two replicas on the system nodes."""
    return {
        "clusterName": cluster_name,
        # Region and VPC explicit: the controller would otherwise ask instance metadata.
        "region": region,
        "vpcId": vpc_id,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(SYSTEM_LABEL),
        "replicaCount": 2,
    }


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """When the workload exposes an internal NLB (`serving.internal_nlb`)."""
    return needs.load_balancer_controller


def build(scope: AddonScope) -> ControllerAddon:
    """The controller on the system nodes, for the cluster's VPC."""
    stack = Stack.of(scope.stack)
    values = controller_values(scope.settings.cluster_name, scope.vpc.vpc_id, stack.region)
    release = scope.release(
        AWS_LOAD_BALANCER_CONTROLLER_CHART, "aws-load-balancer-controller", KUBE_SYSTEM, values
    )
    props = ControllerChartProps(release, IDENTITY, controller_statements(stack))
    return ControllerAddon(scope.stack, "LoadBalancerController", props)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(name="aws_load_balancer_controller", installed=installed, build=build)
