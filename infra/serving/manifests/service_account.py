"""The service account of one workload component (pure): the serving stack applies it beside the
component's Pod Identity role (infra/serving/identity.py), and `python -m trnspec_tools manifests`
exports it with the rest of the workload."""

from __future__ import annotations

from infra.serving.manifests.pod import Manifest


def service_account(name: str, namespace: str) -> Manifest:
    """A ServiceAccount whose pods get no API token unless a pod asks for one; EKS Pod Identity
    mounts its own token (infra/serving/manifests/pod.py)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": name},
        },
        "automountServiceAccountToken": False,
    }
