"""checkov findings on the manifests that are the design, each skipped next to its resource.

checkov reads `checkov.io/skip<N>: <CHECK_ID>=<reason>` annotations in a Kubernetes object's
metadata and reports the check as skipped with that reason (checkov docs, "Suppressing and Skipping
Policies", Kubernetes). Like the cdk-nag acknowledgements (infra/compliance/nag.py), every skip
names one check and why it does not apply; tests/infra/serving/manifests/test_manifest_scan.py runs
checkov over every manifest the synthesized templates embed and fails on any finding without one,
and on any skip that no longer matches a finding.
"""

from __future__ import annotations

from infra.compliance.k8s_scan import skip_annotations

__all__ = ["NEURON_POD_SKIPS", "WEIGHTS_POD_SKIPS", "skip_annotations"]

#: The serving Deployment and the precompile Job (one pod template, infra/serving/manifests/pod.py).
NEURON_POD_SKIPS: dict[str, str] = {
    "CKV_K8S_11": (
        "no CPU limit on purpose: CFS throttling of the Neuron runtime's host threads adds "
        "latency; the request reserves the pod's share of the node and memory is limited"
    ),
    "CKV_K8S_15": (
        "the image is AWS's public Neuron DLC under its versioned release tag "
        "(trnspec.config.images), which AWS does not move; IfNotPresent pulls the multi-GB image "
        "once per node, not on every start"
    ),
    "CKV_K8S_43": (
        "the public Neuron DLC is pinned by its versioned release tag; trnspec.config.images "
        "appends its digest once one is recorded (none verified from here)"
    ),
}

#: The weights Job runs the same image (a CPU limit is set: it only copies files).
WEIGHTS_POD_SKIPS: dict[str, str] = {
    check: NEURON_POD_SKIPS[check] for check in ("CKV_K8S_15", "CKV_K8S_43")
}
