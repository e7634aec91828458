"""What the serving workload needs of an existing cluster, read from its own manifests, and
whether a cluster's nodes (`kubectl get nodes -o json`) provide the node-side part.

Pure: manifests and parsed node objects in, `Requirement`s and `Verdict`s out; the command
(`python -m trnspec_tools manifests --check`, trnspec_tools/manifests.py) reads the files and
prints. Every requirement comes with the kubectl command that verifies it on the cluster; the
node-side ones (the Neuron device resource, the node labels the pods select, the taints they
must tolerate) are also evaluated against the nodes when given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_text

from infra.contracts import NEURON_DEVICE_RESOURCE
from infra.platform.cluster.placement import neuron_pods, pod_request
from infra.serving.manifests.pod import Manifest

#: The EKS Pod Identity agent's DaemonSet (EKS add-on eks-pod-identity-agent, in kube-system).
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
#: The AWS Load Balancer Controller's Deployment (its chart's default name).
LOAD_BALANCER_CONTROLLER = "aws-load-balancer-controller"
#: Taint effects that keep a pod off a node unless it tolerates them.
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
#: API groups of built-in kinds (no CRD needed): the core group and *.k8s.io, plus these.
_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "policy", "autoscaling"})


@dataclass(frozen=True)
class Requirement:
    """One thing the workload needs of the cluster, and how to verify it."""

    key: str
    """Short stable name (`neuron-device`, `node-labels`, `crd:scaledobjects.keda.sh`, ...)."""
    need: str
    """What must hold, in one line."""
    command: str
    """The kubectl command that shows whether it holds."""
    node_side: bool = False
    """Evaluated against `kubectl get nodes -o json` when given."""


@dataclass(frozen=True)
class Verdict:
    """A node-side requirement evaluated on the nodes."""

    requirement: Requirement
    passed: bool
    detail: str


@dataclass(frozen=True)
class PodAsk:
    """What the workload's Trn2 pods ask of a node: the union over them."""

    node_selector: dict[str, str]
    tolerations: tuple[dict[str, Any], ...]
    neuron_devices: int
    scheduler_names: tuple[str, ...]


def pod_ask(manifests: Iterable[Manifest]) -> PodAsk:
    """The node labels, tolerations, Neuron devices (the largest single pod's) and scheduler
    names of every pod template in `manifests`."""
    selector: dict[str, str] = {}
    tolerations: list[dict[str, Any]] = []
    schedulers: set[str] = set()
    manifests = list(manifests)
    for obj in manifests:
        pod = obj.get("spec", {}).get("template", {}).get("spec")
        if not pod:
            continue
        selector.update(pod.get("nodeSelector", {}))
        tolerations += [t for t in pod.get("tolerations", []) if t not in tolerations]
        if pod.get("schedulerName"):
            schedulers.add(pod["schedulerName"])
    devices = [pod_request(pod, NEURON_DEVICE_RESOURCE) for _, pod in neuron_pods(manifests)]
    return PodAsk(
        node_selector=selector,
        tolerations=tuple(tolerations),
        neuron_devices=int(max(devices, default=0)),
        scheduler_names=tuple(sorted(schedulers)),
    )


def _selector_text(selector: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _crd_name(manifest: Manifest) -> str | None:
    """`<plural>.<group>` of a custom kind's CRD (plural: the lowercased kind plus `s`, as every
    kind here is named), None for a built-in kind."""
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    if group in _BUILTIN_GROUPS or group.endswith(".k8s.io"):
        return None
    return f"{str(manifest['kind']).lower()}s.{group}"


def _prometheus_command(url: str) -> str:
    """A command that asks Prometheus at `url` whether it is ready: through the API server's
    service proxy for a cluster Service URL, else from a throwaway pod in the cluster."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    labels = host.split(".")
    if len(labels) >= 3 and labels[2] == "svc":
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = f"/api/v1/namespaces/{labels[1]}/services/{labels[0]}:{port}/proxy/-/ready"
        return f"kubectl get --raw '{path}'"
    return (
        "kubectl run trnspec-prometheus-check --rm -i --restart=Never "
        f"--image=curlimages/curl -- curl -sf {url.rstrip('/')}/-/ready"
    )


def requirements(manifests: Sequence[Manifest], ebs_storage_class: str | None) -> list[Requirement]:
    """Everything the workload's manifests need of the cluster, node-side first.

    `ebs_storage_class`: the StorageClass the pods' claims name (None with node-local weights).
    """
    ask = pod_ask(manifests)
    selector = _selector_text(ask.node_selector)
    out = [
        Requirement(
            "neuron-device",
            f"a node with the labels below advertises {NEURON_DEVICE_RESOURCE} >= "
            f"{ask.neuron_devices} (the Neuron device plugin)",
            "kubectl get nodes -l "
            f"{selector} -o custom-columns='NAME:.metadata.name,"
            f"NEURON:.status.allocatable.{NEURON_DEVICE_RESOURCE.replace('.', chr(92) + '.')}'",
            node_side=True,
        ),
        Requirement(
            "node-labels",
            f"a node carries the labels the pods select: {selector}",
            f"kubectl get nodes -l {selector}",
            node_side=True,
        ),
        Requirement(
            "node-taints",
            "every NoSchedule/NoExecute taint on such a node is tolerated by the pods ("
            + ", ".join(_toleration_text(t) for t in ask.tolerations)
            + ")",
            f"kubectl get nodes -l {selector} -o custom-columns='NAME:.metadata.name,"
            "TAINTS:.spec.taints[*].key,EFFECTS:.spec.taints[*].effect'",
            node_side=True,
        ),
    ]
    out += [
        Requirement(
            f"scheduler:{name}",
            f"the scheduler the pods name runs: {name} (the Neuron scheduler extension)",
            f"kubectl get deployments -A --field-selector metadata.name={name}",
        )
        for name in ask.scheduler_names
    ]
    crds = sorted({c for m in manifests if (c := _crd_name(m)) is not None})
    out += [
        Requirement(f"crd:{crd}", f"the CRD {crd} is installed", f"kubectl get crd {crd}")
        for crd in crds
    ]
    out += [
        Requirement(
            "prometheus",
            f"Prometheus answers at {url} (KEDA's trigger queries it)",
            _prometheus_command(url),
        )
        for url in sorted(_prometheus_urls(manifests))
    ]
    out.append(
        Requirement(
            "pod-identity-agent",
            "the EKS Pod Identity agent runs (the pods' AWS credentials)",
            f"kubectl -n kube-system get daemonset {POD_IDENTITY_AGENT}",
        )
    )
    if ebs_storage_class is not None:
        out.append(
            Requirement(
                f"storageclass:{ebs_storage_class}",
                f"the StorageClass {ebs_storage_class} exists (the weights' volume claims)",
                f"kubectl get storageclass {ebs_storage_class}",
            )
        )
    if any(_is_nlb(m) for m in manifests):
        out.append(
            Requirement(
                "load-balancer-controller",
                "the AWS Load Balancer Controller runs (the internal NLB Service)",
                f"kubectl get deployments -A --field-selector metadata.name="
                f"{LOAD_BALANCER_CONTROLLER}",
            )
        )
    return out


def _toleration_text(t: Mapping[str, Any]) -> str:
    key = t.get("key", "*")
    value = f"={t['value']}" if t.get("operator", "Equal") == "Equal" and "value" in t else ""
    return f"{key}{value}:{t.get('effect', '*')}"


def _prometheus_urls(manifests: Iterable[Manifest]) -> set[str]:
    return {
        str(trigger["metadata"]["serverAddress"])
        for m in manifests
        if m.get("kind") == "ScaledObject"
        for trigger in m.get("spec", {}).get("triggers", [])
        if trigger.get("type") == "prometheus"
    }


def _is_nlb(manifest: Manifest) -> bool:
    return (
        manifest.get("kind") == "Service" and manifest.get("spec", {}).get("type") == "LoadBalancer"
    )


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether one of `tolerations` tolerates `taint` (Kubernetes' rule: an empty effect matches
    every effect; `Exists` with no key matches every taint; `Equal` compares the value)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


@dataclass(frozen=True)
class Node:
    """What the check reads of one node."""

    name: str
    labels: dict[str, str]
    taints: tuple[dict[str, Any], ...]
    neuron_devices: int


def parse_nodes(document: object, field: str = "--nodes") -> list[Node]:
    """The nodes of a `kubectl get nodes -o json` document (a List with `items`, or one Node);
    BoundaryError naming the field and where, for anything else."""
    if isinstance(document, dict) and document.get("kind") == "Node":
        document = {"items": [document]}
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise BoundaryError(
            field, type(document).__name__, "not `kubectl get nodes -o json` output (no items)"
        )
    nodes = []
    for i, item in enumerate(document["items"]):
        at = f"{field} items[{i}]"
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise BoundaryError(at, "", "not a Node: no metadata.name")
        labels = meta.get("labels") or {}
        taints = (item.get("spec") or {}).get("taints") or []
        allocatable = (item.get("status") or {}).get("allocatable") or {}
        if not isinstance(labels, dict) or not isinstance(taints, list):
            raise BoundaryError(at, meta["name"], "labels must be a mapping, taints a list")
        if not isinstance(allocatable, dict) or not all(isinstance(t, dict) for t in taints):
            raise BoundaryError(at, meta["name"], "allocatable must be a mapping, taints objects")
        devices = allocatable.get(NEURON_DEVICE_RESOURCE, "0")
        nodes.append(
            Node(
                name=meta["name"],
                labels={str(k): str(v) for k, v in labels.items()},
                taints=tuple(taints),
                neuron_devices=int_text(
                    str(devices), f"{at}.status.allocatable.{NEURON_DEVICE_RESOURCE}", lo=0
                ),
            )
        )
    return nodes


def _names(nodes: Sequence[Node]) -> str:
    shown = ", ".join(n.name for n in nodes[:5])
    return shown + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")


def evaluate(manifests: Sequence[Manifest], nodes: Sequence[Node]) -> list[Verdict]:
    """The node-side requirements on `nodes`: the labels on some node; the Neuron devices and
    the tolerated taints on some node carrying those labels."""
    ask = pod_ask(manifests)
    by_key = {r.key: r for r in requirements(manifests, None) if r.node_side}
    selected = [n for n in nodes if all(n.labels.get(k) == v for k, v in ask.node_selector.items())]
    none = f"no node carries {_selector_text(ask.node_selector)} ({len(nodes)} node(s) read)"
    enough = [n for n in selected if n.neuron_devices >= ask.neuron_devices]
    tolerated = [
        n
        for n in selected
        if all(
            tolerates(ask.tolerations, t) for t in n.taints if t.get("effect") in _BLOCKING_EFFECTS
        )
    ]
    most = max((n.neuron_devices for n in selected), default=0)
    return [
        Verdict(
            by_key["neuron-device"],
            bool(enough),
            f"{len(enough)} node(s): {_names(enough)}"
            if enough
            else (none if not selected else f"at most {most} on {_names(selected)}"),
        ),
        Verdict(
            by_key["node-labels"],
            bool(selected),
            f"{len(selected)} node(s): {_names(selected)}" if selected else none,
        ),
        Verdict(
            by_key["node-taints"],
            bool(tolerated),
            f"{len(tolerated)} node(s): {_names(tolerated)}"
            if tolerated
            else (none if not selected else f"an untolerated taint on {_names(selected)}"),
        ),
    ]
