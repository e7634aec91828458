"""A small model of Kubernetes NetworkPolicy semantics (networking.k8s.io/v1), for the tests.

What it implements, from the API reference and the "Network Policies" concept page:
- a pod is isolated for a direction when a policy in its namespace selects it (podSelector) and
  lists that direction in policyTypes (default: Ingress, plus Egress when the policy has egress
  rules); a non-isolated pod allows everything in that direction;
- an isolated pod allows a connection when any rule of any selecting policy matches it: policies
  and rules are additive, there is no deny rule;
- a rule with no `from`/`to` matches every peer, with no `ports` every port;
- a peer with podSelector only: pods of the policy's namespace; namespaceSelector only: every
  pod of the matching namespaces; both in one peer: pods matching both (AND); separate peers OR;
- ipBlock: addresses in `cidr` and not in `except`. It is applied to pod addresses too, as the
  VPC CNI's agent does (the API leaves ipBlock on pod IPs to the implementation);
- label selectors: matchLabels plus matchExpressions (In, NotIn, Exists, DoesNotExist); `{}`
  selects everything;
- ports: protocol (default TCP), numeric or named port, endPort ranges.
A connection needs both the source's egress and the destination's ingress. Traffic from the
pod's own node (kubelet probes) and loopback is outside the model: the VPC CNI agent always
allows them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    ip: str
    #: Named container ports, for policies that use port names.
    named_ports: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Address:
    """An endpoint outside the cluster's pods (an NLB, a VPC endpoint, S3, the Pod Identity
    agent): matched only by ipBlock."""

    ip: str


Endpoint = Pod | Address


@dataclass
class Cluster:
    """Namespaces (name -> labels) and the NetworkPolicies applied to them."""

    namespaces: dict[str, dict[str, str]]
    policies: list[Manifest]

    def namespace_labels(self, name: str) -> dict[str, str]:
        # The API server sets kubernetes.io/metadata.name on every namespace.
        return {**self.namespaces.get(name, {}), "kubernetes.io/metadata.name": name}

    def allows(self, src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> bool:
        egress_ok = not isinstance(src, Pod) or self._allowed(src, dst, port, protocol, "Egress")
        ingress_ok = not isinstance(dst, Pod) or self._allowed(dst, src, port, protocol, "Ingress")
        return egress_ok and ingress_ok

    def admits(self, dst: Pod, src: Endpoint, port: int, protocol: str = "TCP") -> bool:
        """The destination's ingress side alone (the source's egress not considered)."""
        return self._allowed(dst, src, port, protocol, "Ingress")

    def _selecting(self, pod: Pod, direction: str) -> list[Manifest]:
        out = []
        for policy in self.policies:
            if policy["metadata"]["namespace"] != pod.namespace:
                continue
            spec = policy["spec"]
            if not selector_matches(spec.get("podSelector", {}), pod.labels):
                continue
            if direction in policy_types(spec):
                out.append(policy)
        return out

    def _allowed(self, pod: Pod, peer: Endpoint, port: int, protocol: str, direction: str) -> bool:
        selecting = self._selecting(pod, direction)
        if not selecting:
            return True
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        # The port is the destination's: the policed pod's own on ingress, the peer's on egress.
        target = pod if direction == "Ingress" else peer
        for policy in selecting:
            ns = policy["metadata"]["namespace"]
            for rule in policy["spec"].get(key, []) or []:
                peers = rule.get(peers_key)
                if peers and not any(self._peer_matches(p, peer, ns) for p in peers):
                    continue
                ports = rule.get("ports")
                if ports and not any(port_matches(p, port, protocol, target) for p in ports):
                    continue
                return True
        return False

    def _peer_matches(self, peer: dict[str, Any], endpoint: Endpoint, policy_ns: str) -> bool:
        if "ipBlock" in peer:
            return ip_block_matches(peer["ipBlock"], endpoint.ip)
        if not isinstance(endpoint, Pod):
            return False  # selectors only ever select pods
        ns_sel = peer.get("namespaceSelector")
        pod_sel = peer.get("podSelector")
        if ns_sel is None:
            in_ns = endpoint.namespace == policy_ns
        else:
            in_ns = selector_matches(ns_sel, self.namespace_labels(endpoint.namespace))
        return in_ns and (pod_sel is None or selector_matches(pod_sel, endpoint.labels))


def policy_types(spec: dict[str, Any]) -> list[str]:
    if "policyTypes" in spec:
        return list(spec["policyTypes"])
    return ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def ip_block_matches(block: dict[str, Any], ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    if address not in ipaddress.ip_network(block["cidr"]):
        return False
    return not any(address in ipaddress.ip_network(e) for e in block.get("except") or [])


def port_matches(rule_port: dict[str, Any], port: int, protocol: str, target: Endpoint) -> bool:
    if rule_port.get("protocol", "TCP") != protocol:
        return False
    if "port" not in rule_port:
        return True  # every port of that protocol
    wanted = rule_port["port"]
    if isinstance(wanted, str):
        named = target.named_ports if isinstance(target, Pod) else {}
        return named.get(wanted) == port
    end = rule_port.get("endPort", wanted)
    return wanted <= port <= end
