"""checkov findings on the manifests that are the design, each skipped next to its resource.

checkov reads `checkov.io/skip<N>: <CHECK_ID>=<reason>` annotations in a Kubernetes object's
metadata and reports the check as skipped with that reason (checkov docs, "Suppressing and
Skipping Policies", Kubernetes). Like the cdk-nag acknowledgements (infra/nag.py), every skip
names one check and why it does not apply; tests/infra/workload/test_manifest_scan.py runs
checkov over every manifest the synthesized templates embed and fails on any finding without
one, and on any skip that no longer matches a finding.
"""

from __future__ import annotations

#: The serving Deployment and the precompile Job (one pod template, infra/workload/pod.py).
NEURON_POD_SKIPS: dict[str, str] = {
    "CKV_K8S_11": (
        "no CPU limit on purpose: CFS throttling of the Neuron runtime's host threads adds "
        "latency; the request reserves the pod's share of the node and memory is limited"
    ),
    "CKV_K8S_15": (
        "the tag is the CDK asset hash of the image's build context, so it never names another "
        "image; IfNotPresent cannot run a stale image and spares a registry call per start"
    ),
    "CKV_K8S_43": (
        "the image is built and pushed by cdk-assets at deploy time: its digest does not exist "
        "at synth; the content-addressed asset tag pins it instead"
    ),
}

#: The neuron-monitor DaemonSet (infra/neuron.py): it reads every Neuron device's counters on
#: the node, which the device plugin does not hand to an unprivileged container, and AWS ships
#: it privileged (aws-neuron-sdk src/k8/k8s-neuron-monitor-daemonset.yml).
_PRIVILEGED = "neuron-monitor reads all Neuron devices of the node through the driver"
NEURON_MONITOR_SKIPS: dict[str, str] = {
    "CKV_K8S_16": f"privileged: {_PRIVILEGED} (as AWS's own DaemonSet)",
    "CKV_K8S_20": f"privileged implies privilege escalation: {_PRIVILEGED}",
    "CKV_K8S_22": "AWS's image is not documented to run on a read-only root filesystem",
    "CKV_K8S_23": f"runs as root like AWS's DaemonSet: {_PRIVILEGED}",
    "CKV_K8S_28": "privileged containers keep NET_RAW; the pod exposes only its metrics port",
    "CKV_K8S_29": f"a security context is set (privileged): {_PRIVILEGED}",
    "CKV_K8S_31": "seccomp does not apply to a privileged container",
    "CKV_K8S_37": "privileged containers hold all capabilities; dropping some has no effect",
    "CKV_K8S_40": f"runs as root (UID 0): {_PRIVILEGED}",
    "CKV_K8S_43": (
        "public.ecr.aws/neuron/neuron-monitor is pinned by version tag: its digest could not be "
        "resolved offline here; record it with `crane digest` before production"
    ),
    "CKV_K8S_15": "the version tag is pinned; IfNotPresent keeps node restarts off the registry",
}


def skip_annotations(skips: dict[str, str]) -> dict[str, str]:
    """`checkov.io/skip<N>` annotations, numbered in check order.

    checkov splits the value at "=" into exactly two parts, so a reason may not contain one.
    """
    for check, reason in skips.items():
        if "=" in reason:
            raise ValueError(f"skip reason for {check} contains '=': checkov cannot parse it")
    return {
        f"checkov.io/skip{i}": f"{check}={reason}"
        for i, (check, reason) in enumerate(sorted(skips.items()), start=1)
    }
