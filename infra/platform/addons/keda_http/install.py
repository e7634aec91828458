"""The KEDA HTTP add-on (kedacore/http-add-on): its chart on the system nodes, in KEDA's
namespace, and the policy that isolates the interceptor pods.

Installed when the workload scales to zero (`serving.scale_to_zero`): the workload's
InterceptorRoute sends its requests through the interceptor, which holds them while KEDA scales
the Deployment from zero (infra/serving/manifests/wake.py). Request timeouts are per route, so
the chart's global ones stay at their defaults; its shutdown ones do not:

- Drain. On SIGTERM the interceptor marks itself unready, keeps serving `shutdownDelay`, closes
  its listener, then waits at most `drainTimeout` for the requests in flight (kedacore/charts
  http-add-on/values.yaml at 0.15.0 and on main in August 2026; kedacore/http-add-on#1636). The
  chart's 30 s would cut every held or streamed request of a node drain or a rollout: it is set
  to the workload's longest request through the route (WorkloadNeeds.longest_request_seconds),
  and the pod's `terminationGracePeriodSeconds` to that plus `shutdownDelay` plus a margin (the
  chart: "Must be at least shutdownDelay + drainTimeout").
- One wedged interceptor. Up to 0.15.0 the scaler's unbounded /queue fetch crash-looped the
  scaler, the cluster's only source of HTTP metrics, when one interceptor pod accepted the
  connection but never answered (kedacore/http-add-on#1730); 0.16.0 bounds each fetch by the
  queue tick (kedacore/http-add-on#1729), so that pod is skipped for the tick. Two interceptors
  and two scalers run, and the chart's interceptor PodDisruptionBudget (maxUnavailable 1)
  keeps one interceptor through a node drain.
- Routing. 0.16.0 can send requests to pod IPs instead of the Service (`directPodRouting`,
  kedacore/http-add-on#1473); it stays on the Service, as the route and its network policies
  were built and tested with 0.15.0.
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

#: The chart's `interceptor.shutdownDelay` default (values.yaml at 0.15.0): unready, still serving.
INTERCEPTOR_SHUTDOWN_DELAY_SECONDS = 5
#: Grace beyond shutdownDelay + drainTimeout before the kubelet's SIGKILL (process exit).
INTERCEPTOR_GRACE_MARGIN_SECONDS = 15


def keda_http_values(node_selector: dict[str, str], drain_seconds: int) -> dict[str, Any]:
    """Every component on the system nodes; two interceptors (the chart's default is three;
    its PDB keeps one while a node drains) and two scalers; an interceptor that stops drains its
    requests for `drain_seconds` (the longest request through the route)."""
    pin = {"nodeSelector": dict(node_selector)}
    return {
        "operator": dict(pin),
        "scaler": {**pin, "replicas": 2},
        "interceptor": {
            **pin,
            "replicas": {"min": 2, "max": 10},
            "directPodRouting": False,
            "shutdownDelay": f"{INTERCEPTOR_SHUTDOWN_DELAY_SECONDS}s",
            "drainTimeout": f"{drain_seconds}s",
            "terminationGracePeriodSeconds": INTERCEPTOR_SHUTDOWN_DELAY_SECONDS
            + drain_seconds
            + INTERCEPTOR_GRACE_MARGIN_SECONDS,
        },
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
    values = keda_http_values(SYSTEM_LABEL, scope.needs.longest_request_seconds)
    release = scope.release(KEDA_HTTP_CHART, KEDA_HTTP_RELEASE, KEDA_NAMESPACE, values)
    return KedaHttp(scope.stack, "KedaHttp", release)


#: When it is installed, how it is built, its relations (infra/platform/addons/registry.py).
ADDON = Addon(
    name="keda_http",
    installed=installed,
    build=build,
    requires=frozenset({"keda"}),
    reason="its scaler is a KEDA external scaler and its namespace is KEDA's",
)
