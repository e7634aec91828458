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

from infra.contracts import (
    KUBE_PROMETHEUS_STACK_FULLNAME,
    PROMETHEUS_PORT,
)
from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata
from infra.serving.manifests.spec import WorkloadSpec
from infra.settings.serving import ServingSettings

#: vLLM's gauges of requests in execution batches and waiting for a slot.
IN_FLIGHT_METRICS = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def prometheus_url(settings: ServingSettings) -> str:
    if settings.prometheus == "existing":
        assert settings.prometheus_url is not None  # guaranteed by ServingSettings validation
        return settings.prometheus_url
    return (
        f"http://{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus."
        f"{settings.monitoring_namespace}.svc:{PROMETHEUS_PORT}"
    )


def in_flight_query(spec: WorkloadSpec) -> str:
    """Requests running or waiting in this workload (vLLM labels every series with model_name
    and exports both gauges together); 0 when there is no series."""
    selector = f'{{namespace="{spec.namespace}",model_name="{spec.served_model_name}"}}'
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
                        # Each step is a node and a long model load: add one pod at a time and
                        # give it time to start before judging the queue again.
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
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
                        "query": in_flight_query(spec),
                        "threshold": str(spec.streams_per_replica),
                        "activationThreshold": "0",
                    },
                }
            ],
        },
    }
