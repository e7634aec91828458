"""The KEDA HTTP add-on (kedacore/http-add-on): its chart on the system nodes, in KEDA's
namespace, and the policy that isolates the interceptor pods.

Installed when the workload scales to zero (`serving.scale_to_zero`): the workload's
InterceptorRoute sends its requests through the interceptor, which holds them while KEDA scales
the Deployment from zero (infra/serving/manifests/wake.py). Timeouts are per route, so the
chart's global ones stay at their defaults.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.contracts import KEDA_HTTP_RELEASE, KEDA_NAMESPACE
from infra.platform.addons.addon import Addon, AddonScope, WorkloadNeeds
from infra.platform.addons.helm import HelmReleaseProps, helm_release
from infra.platform.addons.keda_http.network_policy import interceptor_policy
from infra.platform.addons.pins import KEDA_HTTP_CHART
from infra.platform.cluster.control_plane import SYSTEM_LABEL
from infra.settings import DeploymentSettings


def keda_http_values(node_selector: dict[str, str]) -> dict[str, Any]:
    """Every component on the system nodes; two interceptors (the chart's default is three;
    its PDB keeps one while a node drains) and two scalers."""
    pin = {"nodeSelector": dict(node_selector)}
    return {
        "operator": dict(pin),
        "scaler": {**pin, "replicas": 2},
        "interceptor": {**pin, "replicas": {"min": 2, "max": 10}},
    }


class KedaHttp(Construct):
    """The chart (attribute `chart`) and the interceptor's policy (attribute `policy`)."""

    def __init__(self, scope: Construct, construct_id: str, props: HelmReleaseProps) -> None:
        super().__init__(scope, construct_id)
        self.chart = helm_release(self, "Chart", props)
        self.policy = eks.KubernetesManifest(
            self, "InterceptorPolicy", cluster=props.cluster, manifest=[interceptor_policy()]
        )
        self.policy.node.add_dependency(self.chart)


def installed(settings: DeploymentSettings, needs: WorkloadNeeds) -> bool:
    """When the workload scales to zero and must wake on traffic."""
    return needs.wake_on_traffic


def build(scope: AddonScope) -> KedaHttp:
    release = scope.release(
        KEDA_HTTP_CHART, KEDA_HTTP_RELEASE, KEDA_NAMESPACE, keda_http_values(SYSTEM_LABEL)
    )
    return KedaHttp(scope.stack, "KedaHttp", release)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(
    name="keda_http",
    installed=installed,
    build=build,
    requires=frozenset({"keda"}),
    reason="its scaler is a KEDA external scaler and its namespace is KEDA's",
)
