"""What the workload's three Jobs (precompile, weights, calibration) share: the Job around the pod
template, and the pod spec of the two that need no Neuron device.

Every Job is bounded (a retry limit and a deadline), kept a week after it finishes so its pods'
logs can be read, and carries its checkov skips as annotations. Its pod template is immutable,
so each Job's name carries a hash of what it runs (a change is a new Job).
"""

from __future__ import annotations

from typing import Any

from infra.compliance.scan_skips import skip_annotations
from infra.serving.manifests.pod import (
    Manifest,
    metadata,
    pod_security_context,
    trn2_placement,
)
from infra.serving.manifests.spec import WorkloadSpec

#: How long a finished Job and its pods stay (for their logs) before Kubernetes deletes them.
JOB_TTL_SECONDS = 7 * 24 * 3600


def job(
    spec: WorkloadSpec,
    *,
    name: str,
    component: str,
    skips: dict[str, str],
    backoff_limit: int,
    deadline_seconds: int,
    template: Manifest,
    suspend: bool | None = None,
) -> Manifest:
    """The Job `name` of `component` running `template`, at most `backoff_limit` pod retries
    and `deadline_seconds` in all; `suspend` set: created suspended (True) or not."""
    body: dict[str, Any] = {} if suspend is None else {"suspend": suspend}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            **metadata(spec, name, component),
            "annotations": skip_annotations(skips),
        },
        "spec": {
            **body,
            "backoffLimit": backoff_limit,
            "activeDeadlineSeconds": deadline_seconds,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "template": template,
        },
    }


def node_pod_spec(
    spec: WorkloadSpec,
    *,
    service_account: str,
    containers: list[Manifest],
    volumes: list[Manifest],
) -> dict[str, Any]:
    """A run-once pod without Neuron devices on the workload's Trn2 nodes (tolerating their
    taint, selecting their labels, so the autoscaler scales the same pool), as the image's
    non-root user, without the Kubernetes API token (EKS Pod Identity mounts its own:
    infra/serving/manifests/pod.py) or service links."""
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        **trn2_placement(spec),
        "securityContext": pod_security_context(),
        "enableServiceLinks": False,
        "containers": containers,
        "volumes": volumes,
    }
