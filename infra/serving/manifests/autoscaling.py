"""KEDA ScaledObject: scale serving pods on the requests in flight in vLLM.

`vllm:num_requests_running` + `vllm:num_requests_waiting` is the number of streams the
workload serves or owes. Per-replica averaging (AverageValue) makes the HPA keep
ceil(in flight / streams_per_replica) replicas, and streams_per_replica defaults to the engine's
max_num_seqs: the replicas `trnspec plan-deploy` priced (ceil(peak streams / max_num_seqs)), and
no replica asked to run a batch larger than the one its plan was chosen at. Waiting alone would
let the HPA shrink a fleet whose every replica is busy as soon as the queue empties. CPU and
NeuronCore utilisation are poor signals on Trn2 (a saturated batch and a nearly idle one both
keep the cores busy) and request rate ignores how long each generation is. The node autoscaler
then adds the Trn2 node a new pod asks for. The scale-up rate is trnspec.config.scale_up's, the
one `plan-deploy` times its ramp with.
"""

from __future__ import annotations

from typing import Any

from trnspec.config import scale_up
from trnspec.config.scale_down import SCALE_TO_ZERO_COOLDOWN_SECONDS, SERVING_POLLING_SECONDS
from trnspec.config.scale_up import scale_up_floor, scale_up_rate

from infra.contracts import (
    KUBE_PROMETHEUS_STACK_FULLNAME,
    PROMETHEUS_PORT,
)
from infra.serving.manifests.monitoring import SERVICE_TARGET_LABEL
from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

#: vLLM's gauges of requests in execution batches and waiting for a slot.
IN_FLIGHT_METRICS = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def _floor(settings: ServingSettings) -> int:
    return scale_up_floor(settings.min_replicas, settings.scale_to_zero)


def scale_up_pods_per_period(settings: ServingSettings) -> int:
    """Pods the HPA may add per period so that RAMP_STEPS periods reach max_replicas from the
    floor (0 with scale to zero): trnspec.config.scale_up, the policy plan-deploy's ramp uses."""
    return scale_up_rate(_floor(settings), settings.max_replicas).pods


def time_to_peak_seconds(settings: ServingSettings) -> int:
    """How long the HPA's policy takes to ask for max_replicas from the floor (node launch and
    model load come on top, in parallel for every new replica)."""
    return scale_up.time_to_peak_seconds(_floor(settings), settings.max_replicas)


def prometheus_url(settings: ServingSettings) -> str:
    if settings.prometheus == "existing":
        assert settings.prometheus_url is not None  # guaranteed by ServingSettings validation
        return settings.prometheus_url
    return (
        f"http://{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus."
        f"{settings.monitoring_namespace}.svc:{PROMETHEUS_PORT}"
    )


def in_flight_selector(spec: WorkloadSpec, settings: ServingSettings) -> str:
    """The series of this Deployment's pods: vLLM labels every series with model_name; the
    in-cluster ServiceMonitor adds `service`, which keeps out a calibration's speculative arm
    (same model name, its own Service). An existing Prometheus scrapes by the pods'
    annotations, which the arm does not carry (calibration.py), so there the arm is not scraped."""
    matchers = [f'namespace="{spec.namespace}"', f'model_name="{spec.served_model_name}"']
    if settings.prometheus == "in-cluster":
        matchers.append(f'{SERVICE_TARGET_LABEL}="{spec.name}"')
    return "{" + ",".join(matchers) + "}"


def in_flight_query(spec: WorkloadSpec, settings: ServingSettings) -> str:
    """Requests running or waiting in this workload (vLLM exports both gauges together); 0 when
    there is no series."""
    selector = in_flight_selector(spec, settings)
    total = " + ".join(f"sum({name}{selector})" for name in IN_FLIGHT_METRICS)
    return f"({total}) or vector(0)"


def deployment_scaled_object(
    spec: WorkloadSpec, replicas: tuple[int, int], polling_s: int, cooldown_s: int, **rest: Any
) -> Manifest:
    """A ScaledObject of `spec`'s Deployment (named for it) between `replicas` (min, max);
    `rest` adds the other spec fields (triggers, fallback, advanced)."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata(spec, spec.name, SERVE_COMPONENT),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicaCount": replicas[0],
            "maxReplicaCount": replicas[1],
            "pollingInterval": polling_s,
            "cooldownPeriod": cooldown_s,
            **rest,
        },
    }


def scaled_object(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    min_replicas = _floor(settings)
    rate = scale_up_rate(min_replicas, settings.max_replicas)
    return deployment_scaled_object(
        spec,
        (min_replicas, settings.max_replicas),
        polling_s=SERVING_POLLING_SECONDS,
        # Only used for the last replica (scale to zero).
        cooldown_s=SCALE_TO_ZERO_COOLDOWN_SECONDS,
        # If Prometheus is unreachable, hold the configured floor instead of guessing.
        fallback={"failureThreshold": 4, "replicas": max(1, settings.min_replicas)},
        advanced={
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    # Reach the plan's peak within RAMP_STEPS periods: every replica the
                    # load asks for starts its node and its load at once.
                    "scaleUp": {
                        "stabilizationWindowSeconds": 0,
                        "policies": [
                            {
                                "type": "Pods",
                                "value": rate.pods,
                                "periodSeconds": rate.period_s,
                            }
                        ],
                    },
                    "scaleDown": {
                        "stabilizationWindowSeconds": 900,
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}],
                    },
                }
            }
        },
        triggers=[
            {
                "type": "prometheus",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": prometheus_url(settings),
                    "query": in_flight_query(spec, settings),
                    "threshold": str(spec.streams_per_replica),
                    "activationThreshold": "0",
                },
            }
        ],
    )
