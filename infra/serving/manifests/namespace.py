"""The serving namespace, with Pod Security admission labels."""

from __future__ import annotations

from infra.contracts import PART_OF, PART_OF_LABEL
from infra.serving.manifests.pod import Manifest


def namespace(name: str) -> Manifest:
    """Enforce the `restricted` Pod Security Standard: the serving pods meet it (non-root,
    no privilege escalation, all capabilities dropped, RuntimeDefault seccomp, no host paths)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                PART_OF_LABEL: PART_OF,
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
            },
        },
    }
