"""NetworkPolicies of the serving namespace: deny everything, then allow what each pod uses.

Enforced by the VPC CNI's network policy agent (the platform enables it in the add-on). Policies
are additive: a pod may send or receive what any policy selecting it allows, so the default deny
selects every pod and each allow-list selects one component.

Serving pods, ingress on the server port only from
- client pods: the labels `client_pod_labels` in `client_namespaces` (default: the serving
  namespace itself);
- the Prometheus pods in `monitoring_namespace` that scrape /metrics (vLLM leaves /metrics and
  /health outside its API-key check), and `scraper_cidrs` for scrapers that are not pods (an
  Amazon Managed Prometheus collector scrapes from ENIs in the VPC). KEDA needs no rule: its
  Prometheus scaler queries Prometheus, never the pods;
- with the internal NLB, the VPC CIDR. The NLB forwards to pod IPs from its own private
  addresses in the VPC's subnets (client IP preservation is off by default for IP targets), so
  the rule must name addresses, not pods; who may reach the NLB itself is its security group
  (`nlb_source_cidrs` -> the Service's loadBalancerSourceRanges). The NLB's addresses share the
  subnets with every pod (VPC CNI gives pods VPC addresses): an ipBlock cannot tell an NLB hop
  from any pod in the VPC, which is why the API key is on by default with the NLB.
The kubelet's probes need no rule: the agent always allows the node's own IP
(aws/aws-network-policy-agent#65).

Serving and precompile pods, egress only to
- CoreDNS (kube-system, UDP and TCP 53);
- HTTPS to the VPC CIDR: the interface endpoints (STS, ECR, Secrets Manager when present);
- HTTPS to `s3_egress_cidrs` minus the private and link-local ranges: S3 through the gateway
  endpoint. A gateway endpoint is a route to S3's *public* addresses (the prefix list
  `com.amazonaws.<region>.s3`), and a NetworkPolicy can only name CIDRs, not prefix lists, so
  the default is every public IPv4 address on 443; list the prefix list's CIDRs to narrow it;
- the EKS Pod Identity agent (169.254.170.23:80) for AWS credentials.
The precompile Job gets no ingress at all: its readiness probe is loopback, which policies never
block. The weights Job gets no ingress either, and besides the same egress HTTPS to any public
address: the Hugging Face Hub and its CDN publish no address ranges, so `s3_egress_cidrs` cannot
narrow it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from infra.contracts import (
    DNS_NAMESPACE,
    DNS_POD_LABELS,
    DNS_PORT,
    HTTPS_PORT,
    KUBE_PROMETHEUS_STACK_FULLNAME,
    NAMESPACE_NAME_LABEL,
    NON_PUBLIC_IPV4_RANGES,
    POD_IDENTITY_AGENT_CIDR,
    POD_IDENTITY_AGENT_PORT,
    PROMETHEUS_OPERATOR_NAME_LABEL,
)
from infra.serving.manifests.pod import (
    PRECOMPILE_COMPONENT,
    SERVE_COMPONENT,
    WEIGHTS_COMPONENT,
    Manifest,
    metadata,
    selector_labels,
)
from infra.serving.manifests.spec import ClusterWorkloadError, WorkloadSpec
from infra.settings.serving import ServingSettings

DEFAULT_DENY_NAME = "default-deny"


def _policy(name: str, namespace: str, labels: dict[str, str], spec: dict[str, Any]) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def _namespace(name: str) -> dict[str, Any]:
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}


def default_deny(spec: WorkloadSpec) -> Manifest:
    """Selects every pod of the namespace for both directions, with no rule: nothing passes
    unless another policy allows it."""
    meta = metadata(spec, DEFAULT_DENY_NAME, "network-policy")
    return _policy(
        meta["name"],
        spec.namespace,
        meta["labels"],
        {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    )


def scraper_pod_labels(settings: ServingSettings) -> dict[str, str]:
    """The Prometheus pods allowed to scrape: the configured labels, and with the in-cluster
    chart also the name of its Prometheus object ("<fullnameOverride>-prometheus")."""
    labels = dict(settings.scraper_pod_labels)
    if settings.prometheus == "in-cluster":
        labels[PROMETHEUS_OPERATOR_NAME_LABEL] = f"{KUBE_PROMETHEUS_STACK_FULLNAME}-prometheus"
    return labels


def _client_peers(spec: WorkloadSpec, settings: ServingSettings) -> list[dict[str, Any]]:
    pods = {"matchLabels": dict(settings.client_pod_labels)}
    if not settings.client_namespaces:
        return [{"podSelector": pods}]  # no namespaceSelector: the policy's own namespace
    return [
        {"namespaceSelector": _namespace(ns), "podSelector": pods}
        for ns in settings.client_namespaces
    ]


def _require_vpc_cidr(spec: WorkloadSpec) -> str:
    if not spec.vpc_cidr:
        raise ClusterWorkloadError(
            [
                "vpc_cidr: the network policies need the VPC's CIDR (for the VPC "
                "endpoints and the internal NLB); pass the cluster VPC's CIDR to derive_workload"
            ]
        )
    return spec.vpc_cidr


def serve_ingress(spec: WorkloadSpec, settings: ServingSettings) -> list[dict[str, Any]]:
    port = [{"protocol": "TCP", "port": spec.port}]
    rules: list[dict[str, Any]] = [
        {"from": _client_peers(spec, settings), "ports": port},
        {
            "from": [
                {
                    "namespaceSelector": _namespace(settings.monitoring_namespace),
                    "podSelector": {"matchLabels": scraper_pod_labels(settings)},
                },
                *({"ipBlock": {"cidr": c}} for c in settings.scraper_cidrs),
            ],
            "ports": port,
        },
    ]
    if settings.internal_nlb:
        rules.append({"from": [{"ipBlock": {"cidr": _require_vpc_cidr(spec)}}], "ports": port})
    return rules


def _public_block(cidr: str) -> dict[str, Any]:
    """`cidr` minus the non-public ranges inside it (`except` must lie within `cidr`)."""
    net = ipaddress.IPv4Network(cidr)
    inside = [r for r in NON_PUBLIC_IPV4_RANGES if ipaddress.IPv4Network(r).subnet_of(net)]
    block: dict[str, Any] = {"cidr": cidr}
    if inside:
        block["except"] = inside
    return block


def egress(spec: WorkloadSpec, settings: ServingSettings) -> list[dict[str, Any]]:
    https = [{"protocol": "TCP", "port": HTTPS_PORT}]
    return [
        _dns_rule(),
        {"to": [{"ipBlock": {"cidr": _require_vpc_cidr(spec)}}], "ports": https},
        {"to": [{"ipBlock": _public_block(c)} for c in settings.s3_egress_cidrs], "ports": https},
        {
            "to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT_CIDR}}],
            "ports": [{"protocol": "TCP", "port": POD_IDENTITY_AGENT_PORT}],
        },
    ]


def serve_policy(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    meta = metadata(spec, spec.name, SERVE_COMPONENT)
    return _policy(
        meta["name"],
        spec.namespace,
        meta["labels"],
        {
            "podSelector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": serve_ingress(spec, settings),
            "egress": egress(spec, settings),
        },
    )


def _egress_only_policy(
    spec: WorkloadSpec, name: str, component: str, egress_rules: list[dict[str, Any]]
) -> Manifest:
    """A Job's pods: Ingress listed with no rule (nothing may connect), egress as given."""
    meta = metadata(spec, name, component)
    return _policy(
        meta["name"],
        spec.namespace,
        meta["labels"],
        {
            "podSelector": {"matchLabels": selector_labels(spec, component)},
            "policyTypes": ["Ingress", "Egress"],
            "egress": egress_rules,
        },
    )


def precompile_policy(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    return _egress_only_policy(
        spec, f"{spec.name}-precompile", PRECOMPILE_COMPONENT, egress(spec, settings)
    )


def _dns_rule() -> dict[str, Any]:
    return {
        "to": [
            {
                "namespaceSelector": _namespace(DNS_NAMESPACE),
                "podSelector": {"matchLabels": dict(DNS_POD_LABELS)},
            }
        ],
        "ports": [
            {"protocol": "UDP", "port": DNS_PORT},
            {"protocol": "TCP", "port": DNS_PORT},
        ],
    }


def weights_policy(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """The weights Job: egress only (S3, credentials, DNS, and the Hub on any public address)."""
    hub = {
        "to": [{"ipBlock": _public_block("0.0.0.0/0")}],
        "ports": [{"protocol": "TCP", "port": HTTPS_PORT}],
    }
    return _egress_only_policy(
        spec, f"{spec.name}-weights", WEIGHTS_COMPONENT, [*egress(spec, settings), hub]
    )


def client_policy(spec: WorkloadSpec, settings: ServingSettings) -> Manifest:
    """Client pods inside the serving namespace (a smoke or bench Job) are under its default
    deny too: let them resolve names and send to the server port, nothing else."""
    meta = metadata(spec, f"{spec.name}-clients", "client")
    return _policy(
        meta["name"],
        spec.namespace,
        meta["labels"],
        {
            "podSelector": {"matchLabels": dict(settings.client_pod_labels)},
            "policyTypes": ["Egress"],
            "egress": [
                _dns_rule(),
                {
                    "to": [
                        {"podSelector": {"matchLabels": selector_labels(spec, SERVE_COMPONENT)}}
                    ],
                    "ports": [{"protocol": "TCP", "port": spec.port}],
                },
            ],
        },
    )


def network_policies(spec: WorkloadSpec, settings: ServingSettings) -> list[Manifest]:
    return [
        default_deny(spec),
        serve_policy(spec, settings),
        precompile_policy(spec, settings),
        *([weights_policy(spec, settings)] if spec.hub_copies else []),
        client_policy(spec, settings),
    ]
