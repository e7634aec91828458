"""KEDA ScaledObject: scale serving pods on the number of requests waiting in vLLM's queue.

`vllm:num_requests_waiting` is the signal that means "users are waiting": requests admitted but
not yet scheduled into a batch. CPU and NeuronCore utilisation are poor signals on Trn2 (a
saturated batch and a nearly idle one both keep the cores busy) and request rate ignores how long
each generation is. Per-replica averaging (AverageValue) makes the HPA add a replica for every
`waiting_requests_per_replica` queued requests; the node autoscaler then adds the Trn2 node the
new pod asks for.
"""

from __future__ import annotations

from infra.serving_settings import ServingSettings
from infra.workload.constants import (
    KUBE_PROMETHEUS_STACK_FULLNAME,
    PROMETHEUS_PORT,
)
from infra.workload.pod import SERVE_COMPONENT, Manifest, metadata
from infra.workload.spec import WorkloadSpec

QUEUE_METRIC = "vllm:num_requests_waiting"


def prometheus_url(settings: ServingSettings) -> str:
    if settings.prometheus == "existing":
        assert settings.prometheus_url is not None  # guaranteed by ServingSettings validation
        return settings.prometheus_url
    return (
        f"http://{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus."
        f"{settings.monitoring_namespace}.svc:{PROMETHEUS_PORT}"
    )


def queue_query(spec: WorkloadSpec) -> str:
    """Total waiting requests of this workload (vLLM labels every series with model_name)."""
    return (
        f'sum({QUEUE_METRIC}{{namespace="{spec.namespace}",'
        f'model_name="{spec.served_model_name}"}}) or vector(0)'
    )


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
                        "query": queue_query(spec),
                        "threshold": str(settings.waiting_requests_per_replica),
                        "activationThreshold": "0",
                    },
                }
            ],
        },
    }
