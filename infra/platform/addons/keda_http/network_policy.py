"""The interceptor pods' ingress: isolated, so a workload's own policy (infra/serving/manifests/
wake.py) decides which clients may reach its route through the proxy port. Only the add-on's
scaler may read the admin port (request counts). The kubelet's probes need no rule (the VPC CNI
agent always allows the node's own address)."""

from __future__ import annotations

from typing import Any

from infra.contracts import (
    KEDA_HTTP_ADMIN_PORT,
    KEDA_HTTP_INTERCEPTOR_POD_LABELS,
    KEDA_HTTP_SCALER_POD_LABELS,
    KEDA_NAMESPACE,
)

INTERCEPTOR_POLICY_NAME = "keda-http-interceptor"


def interceptor_policy() -> dict[str, Any]:
    """Selects the interceptor pods for ingress; admits the scaler on the admin port only."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": INTERCEPTOR_POLICY_NAME, "namespace": KEDA_NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": dict(KEDA_HTTP_INTERCEPTOR_POD_LABELS)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": dict(KEDA_HTTP_SCALER_POD_LABELS)}}],
                    "ports": [{"protocol": "TCP", "port": KEDA_HTTP_ADMIN_PORT}],
                }
            ],
        },
    }
