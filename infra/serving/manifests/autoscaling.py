"""KEDA ScaledObject: scale serving pods on the requests in flight in vLLM.

`vllm:num_requests_running` + `vllm:num_requests_waiting` is the number of streams the
workload serves or owes. Per-replica averaging (AverageValue) makes the HPA keep
ceil(in flight / streams_per_replica) replicas, and streams_per_replica defaults to the engine's
max_num_seqs: the replicas `trnspec plan-deploy` priced (ceil(peak streams / max_num_seqs)), and
no replica asked to run a batch larger than the one its plan was chosen at. Waiting alone would
let the HPA shrink a fleet whose every replica is busy as soon as the queue empties. CPU and
NeuronCore utilisation are poor signals on Trn2 (a saturated batch and a nearly idle one both
keep the cores busy) and request rate ignores how long each generation is. The node autoscaler
then adds the Trn2 node a new pod asks for.
"""

from __future__ import annotations

import math

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
#: The HPA's scale-up period, and in how many such periods it may go from the floor to
#: max_replicas: the peak's replicas are asked for within minutes. Each replica then needs its
#: node and its load (tens of minutes, the same for all of them, in parallel); adding them one by
#: one every 5 minutes took 75 minutes to reach 16 while requests queued behind one replica.
SCALE_UP_PERIOD_SECONDS = 60
RAMP_STEPS = 3


def scale_up_pods_per_period(settings: ServingSettings) -> int:
    """Pods the HPA may add per period so that RAMP_STEPS periods reach max_replicas from the
    floor (0 with scale to zero). The in-flight metric already says how many replicas the load
    needs (ceil(streams / streams_per_replica)), so this only bounds the rate, not the count."""
    floor = 0 if settings.scale_to_zero else settings.min_replicas
    return max(1, math.ceil((settings.max_replicas - floor) / RAMP_STEPS))


def time_to_peak_seconds(settings: ServingSettings) -> int:
    """How long the HPA's policy takes to ask for max_replicas from the floor (node launch and
    model load come on top, in parallel for every new replica)."""
    floor = 0 if settings.scale_to_zero else settings.min_replicas
    steps = math.ceil((settings.max_replicas - floor) / scale_up_pods_per_period(settings))
    return steps * SCALE_UP_PERIOD_SECONDS


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


def scaled_object(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    min_replicas = 0 if settings.scale_to_zero else settings.min_replicas
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata(spec, spec.name, SERVE_COMPONENT),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicaCount": min_replicas,
            "maxReplicaCount": settings.max_replicas,
            "pollingInterval": 15,
            # Only used for the last replica (scale to zero): a Trn2 pod is expensive to bring
            # back, so wait long before dropping it.
            "cooldownPeriod": 1800,
            # If Prometheus is unreachable, hold the configured floor instead of guessing.
            "fallback": {"failureThreshold": 4, "replicas": max(1, settings.min_replicas)},
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        # Reach the plan's peak within RAMP_STEPS periods: every replica the
                        # load asks for starts its node and its load at once.
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [
                                {
                                    "type": "Pods",
                                    "value": scale_up_pods_per_period(settings),
                                    "periodSeconds": SCALE_UP_PERIOD_SECONDS,
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
            "triggers": [
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
        },
    }
