"""In-cluster Service and the optional internal NLB in front of the serving pods, and the
builders every Service of the workload is made with (the wake path's too: wake.py)."""

from __future__ import annotations

from typing import Any

from trnspec.config.pod_contract import HEALTH_PATH

from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata, selector_labels
from infra.serving.manifests.spec import WorkloadSpec

SERVICE_PORT = 80


def nlb_service_name(spec: WorkloadSpec) -> str:
    return f"{spec.name}-nlb"


def http_port(port: int) -> dict[str, Any]:
    """A Service port named `http` onto the pods' port named `http`."""
    return {"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}


def service(
    spec: WorkloadSpec,
    name: str,
    component: str,
    body: dict[str, Any],
    *,
    annotations: dict[str, str] | None = None,
) -> Manifest:
    """The v1 Service `name` of `component` in the workload's namespace, `body` its spec."""
    meta = metadata(spec, name, component)
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": body}


def cluster_ip_service(spec: WorkloadSpec, name: str, component: str, port: int) -> Manifest:
    """A ClusterIP Service on `port` in front of `component`'s pods (their `http` port)."""
    body = {
        "type": "ClusterIP",
        "selector": selector_labels(spec, component),
        "ports": [http_port(port)],
    }
    return service(spec, name, component, body)


def cluster_service(spec: WorkloadSpec) -> Manifest:
    return cluster_ip_service(spec, spec.name, SERVE_COMPONENT, SERVICE_PORT)


def internal_nlb_service(spec: WorkloadSpec, source_cidrs: tuple[str, ...] = ()) -> Manifest:
    """Internal NLB through the AWS Load Balancer Controller, targets are pod IPs.

    IP targets skip the node hop and deregister with the pod, which the preStop drain relies on.
    `source_cidrs` become loadBalancerSourceRanges, which the AWS Load Balancer Controller
    writes into the NLB's security group (AWS re:Post "eks-cidr-ip-address-loadbalancer"; a
    Service without them admits 0.0.0.0/0).
    """
    annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": HEALTH_PATH,
        "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": (
            "deregistration_delay.timeout_seconds=15"
        ),
    }
    body = {
        "type": "LoadBalancer",
        "loadBalancerClass": "service.k8s.aws/nlb",
        "selector": selector_labels(spec, SERVE_COMPONENT),
        "ports": [http_port(SERVICE_PORT)],
        **({"loadBalancerSourceRanges": list(source_cidrs)} if source_cidrs else {}),
    }
    name = nlb_service_name(spec)
    return service(spec, name, SERVE_COMPONENT, body, annotations=annotations)
