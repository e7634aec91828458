"""In-cluster Service and the optional internal NLB in front of the serving pods."""

from __future__ import annotations

from trnspec.config.pod_contract import HEALTH_PATH

from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, metadata, selector_labels
from infra.serving.manifests.spec import WorkloadSpec

SERVICE_PORT = 80


def nlb_service_name(spec: WorkloadSpec) -> str:
    return f"{spec.name}-nlb"


def _ports() -> list[dict[str, object]]:
    return [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}]


def cluster_service(spec: WorkloadSpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(spec, spec.name, SERVE_COMPONENT),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(spec, SERVE_COMPONENT),
            "ports": _ports(),
        },
    }


def internal_nlb_service(spec: WorkloadSpec, source_cidrs: tuple[str, ...] = ()) -> Manifest:
    """Internal NLB through the AWS Load Balancer Controller, targets are pod IPs.

    IP targets skip the node hop and deregister with the pod, which the preStop drain relies on.
    `source_cidrs` become loadBalancerSourceRanges, which the AWS Load Balancer Controller
    writes into the NLB's security group (AWS re:Post "eks-cidr-ip-address-loadbalancer"; a
    Service without them admits 0.0.0.0/0).
    """
    meta = metadata(spec, nlb_service_name(spec), SERVE_COMPONENT)
    meta["annotations"] = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external",
        "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
        "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
        "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": HEALTH_PATH,
        "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": (
            "deregistration_delay.timeout_seconds=15"
        ),
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "type": "LoadBalancer",
            "loadBalancerClass": "service.k8s.aws/nlb",
            "selector": selector_labels(spec, SERVE_COMPONENT),
            "ports": _ports(),
            **({"loadBalancerSourceRanges": list(source_cidrs)} if source_cidrs else {}),
        },
    }
