"""What the serving workload needs of an existing cluster, read from its own manifests, and
whether a cluster's nodes (`kubectl get nodes -o json`) provide the node-side part.

Pure: manifests and parsed node objects in, `Requirement`s and `NodeCheck`s out; the command
(`python -m trnspec_tools manifests --check`, trnspec_tools/manifests.py) reads the files and
prints. Every requirement comes with the kubectl command that verifies it on the cluster, built
from its words by trnspec.boundary.shell (a name from a setting or a file is one quoted argument,
never shell syntax); the node-side ones (the Neuron device resource, the node labels the pods
select, the taints they must tolerate) are also evaluated against the nodes when given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_text
from trnspec.boundary.shell import shell_commands
from trnspec.hardware.topology import INSTANCE_TYPES, instance

from infra.contracts import INSTANCE_TYPE_LABEL, NEURON_DEVICE_RESOURCE
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
    argv: tuple[tuple[str, ...], ...]
    """The kubectl commands (their words) that show whether it holds, run one after another."""
    node_side: bool = False
    """Evaluated against `kubectl get nodes -o json` when given."""

    @property
    def command(self) -> str:
        """`argv` as one line to copy into a shell, every word quoted (`a && b` for two)."""
        return shell_commands(*self.argv)


def _kubectl(*words: str) -> tuple[tuple[str, ...], ...]:
    """One kubectl command's words, as `Requirement.argv` holds them."""
    return (("kubectl", *words),)


#: A node-side verdict: it holds, it does not, or no node it applies to is up to tell.
Outcome = Literal["pass", "fail", "no-node"]


@dataclass(frozen=True)
class NodeCheck:
    """A node-side requirement evaluated on the nodes."""

    requirement: Requirement
    outcome: Outcome
    detail: str

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


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


def _prometheus_command(url: str) -> tuple[tuple[str, ...], ...]:
    """A command that asks Prometheus at `url` whether it is ready: through the API server's
    service proxy for a cluster Service URL, else from a throwaway pod in the cluster."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    labels = host.split(".")
    if len(labels) >= 3 and labels[2] == "svc":
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = f"/api/v1/namespaces/{labels[1]}/services/{labels[0]}:{port}/proxy/-/ready"
        return _kubectl("get", "--raw", path)
    return _kubectl(
        "run",
        "trnspec-prometheus-check",
        "--rm",
        "-i",
        "--restart=Never",
        "--image=curlimages/curl",
        "--",
        "curl",
        "-sf",
        f"{url.rstrip('/')}/-/ready",
    )


def requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """Everything the workload's manifests need of the cluster, node-side first, each derived
    from the objects themselves: the nodes the pods select, the schedulers they name, the
    namespaces objects go to that no object creates, the CRD of every custom kind, the
    StorageClass of every volume claim, the Prometheus the triggers query and the monitors'
    selection by it, the pods the monitors scrape, the Services the objects point at outside
    their own namespaces (the KEDA HTTP add-on's), the NLB's controller; and the Pod Identity
    agent every pod's credentials come from."""
    ask = pod_ask(manifests)
    return [
        *_node_requirements(ask),
        *_scheduler_requirements(ask),
        *_namespace_requirements(manifests),
        *_crd_requirements(manifests),
        *_storage_class_requirements(manifests),
        *_prometheus_requirements(manifests),
        *_monitor_requirements(manifests),
        *_service_requirements(manifests),
        *_controller_requirements(manifests),
    ]


def _node_requirements(ask: PodAsk) -> list[Requirement]:
    """A node the pods select, with the Neuron devices they ask for and only taints they
    tolerate."""
    selector = _selector_text(ask.node_selector)
    return [
        Requirement(
            "neuron-device",
            f"a node with the labels below advertises {NEURON_DEVICE_RESOURCE} >= "
            f"{ask.neuron_devices} (the Neuron device plugin)",
            _kubectl(
                "get",
                "nodes",
                "-l",
                selector,
                "-o",
                "custom-columns=NAME:.metadata.name,"
                f"NEURON:.status.allocatable.{NEURON_DEVICE_RESOURCE.replace('.', chr(92) + '.')}",
            ),
            node_side=True,
        ),
        Requirement(
            "node-labels",
            f"a node carries the labels the pods select: {selector}",
            _kubectl("get", "nodes", "-l", selector),
            node_side=True,
        ),
        Requirement(
            "node-taints",
            "every NoSchedule/NoExecute taint on such a node is tolerated by the pods ("
            + ", ".join(_toleration_text(t) for t in ask.tolerations)
            + ")",
            _kubectl(
                "get",
                "nodes",
                "-l",
                selector,
                "-o",
                "custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key,"
                "EFFECTS:.spec.taints[*].effect",
            ),
            node_side=True,
        ),
    ]


def _scheduler_requirements(ask: PodAsk) -> list[Requirement]:
    """Every scheduler the pods name runs."""
    return [
        Requirement(
            f"scheduler:{name}",
            f"the scheduler the pods name runs: {name} (the Neuron scheduler extension)",
            _kubectl("get", "deployments", "-A", "--field-selector", f"metadata.name={name}"),
        )
        for name in ask.scheduler_names
    ]


def _namespace_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """Every namespace objects go to that no exported object creates."""
    return [
        Requirement(
            f"namespace:{ns}",
            f"the namespace {ns} exists (no exported object creates it; it holds "
            f"{_owners_text(owners)})",
            _kubectl("get", "namespace", ns),
        )
        for ns, owners in sorted(foreign_namespaces(manifests).items())
    ]


def _crd_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """The CRD of every custom kind among the objects."""
    crds = sorted({c for m in manifests if (c := _crd_name(m)) is not None})
    return [
        Requirement(f"crd:{crd}", f"the CRD {crd} is installed", _kubectl("get", "crd", crd))
        for crd in crds
    ]


def _storage_class_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """The StorageClass of every volume claim, and its provisioner's CSI driver."""
    return [
        Requirement(
            f"storageclass:{name}",
            f"the StorageClass {name} exists and its provisioner's CSI driver runs (the volume "
            f"claims of {_owners_text(owners)}; the platform's {name} is the EBS CSI driver's, "
            "ebs.csi.aws.com)",
            (
                (
                    "kubectl",
                    "get",
                    "storageclass",
                    name,
                    "-o",
                    "custom-columns=NAME:.metadata.name,PROVISIONER:.provisioner",
                ),
                ("kubectl", "get", "csidriver"),
            ),
        )
        for name, owners in sorted(storage_classes(manifests).items())
    ]


def _prometheus_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """Every Prometheus the KEDA triggers query answers."""
    return [
        Requirement(
            "prometheus",
            f"Prometheus answers at {url} (KEDA's trigger queries it)",
            _prometheus_command(url),
        )
        for url in sorted(_prometheus_urls(manifests))
    ]


def _service_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """Every Service the objects point at outside their own namespaces."""
    return [
        Requirement(
            f"service:{ns}/{name}",
            f"the Service {name} exists in {ns} ({why})",
            _kubectl("-n", ns, "get", "service", name),
        )
        for (ns, name), why in sorted(referenced_services(manifests).items())
    ]


def _controller_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """The Pod Identity agent every pod's credentials come from, and the AWS Load Balancer
    Controller when a Service asks for an NLB."""
    out = [
        Requirement(
            "pod-identity-agent",
            "the EKS Pod Identity agent runs (the pods' AWS credentials)",
            _kubectl("-n", "kube-system", "get", "daemonset", POD_IDENTITY_AGENT),
        )
    ]
    if any(_is_nlb(m) for m in manifests):
        out.append(
            Requirement(
                "load-balancer-controller",
                "the AWS Load Balancer Controller runs (the internal NLB Service)",
                _kubectl(
                    "get",
                    "deployments",
                    "-A",
                    "--field-selector",
                    f"metadata.name={LOAD_BALANCER_CONTROLLER}",
                ),
            )
        )
    return out


def _owner(m: Manifest) -> str:
    return f"{m.get('kind')}/{m.get('metadata', {}).get('name')}"


def _owners_text(owners: Sequence[str]) -> str:
    return ", ".join(owners[:4]) + (f" and {len(owners) - 4} more" if len(owners) > 4 else "")


def foreign_namespaces(manifests: Iterable[Manifest]) -> dict[str, list[str]]:
    """{namespace: [owner, ...]} of the namespaces objects go to that no object creates."""
    manifests = list(manifests)
    created = {m["metadata"]["name"] for m in manifests if m.get("kind") == "Namespace"}
    out: dict[str, list[str]] = {}
    for m in manifests:
        ns = m.get("metadata", {}).get("namespace")
        if ns and ns not in created:
            out.setdefault(ns, []).append(_owner(m))
    return out


def _claim_templates(m: Manifest) -> list[dict[str, Any]]:
    """The claim specs an object makes: a PVC's own, a StatefulSet's volumeClaimTemplates, and
    every generic ephemeral volume of its pod template."""
    spec = m.get("spec") or {}
    if m.get("kind") == "PersistentVolumeClaim":
        return [spec]
    claims = [t.get("spec") or {} for t in spec.get("volumeClaimTemplates") or []]
    pod = (spec.get("template") or {}).get("spec") or {}
    for volume in pod.get("volumes") or []:
        template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
        if template:
            claims.append(template.get("spec") or {})
    return claims


def storage_classes(manifests: Iterable[Manifest]) -> dict[str, list[str]]:
    """{StorageClass: [owner, ...]} of every volume claim the objects make (a claim without a
    class takes the cluster's default class: listed as `(default)`)."""
    out: dict[str, list[str]] = {}
    for m in manifests:
        for claim in _claim_templates(m):
            name = claim.get("storageClassName") or "(default)"
            owners = out.setdefault(name, [])
            if _owner(m) not in owners:
                owners.append(_owner(m))
    return out


def _service_host(host: str) -> tuple[str, str] | None:
    """(namespace, name) of an in-cluster Service host: `name.ns`, `name.ns.svc[.cluster.local]`
    with or without a port; None for anything else."""
    labels = host.split(":")[0].split(".")
    if len(labels) == 2 or (len(labels) >= 3 and labels[2] == "svc"):
        return labels[1], labels[0]
    return None


def referenced_services(manifests: Iterable[Manifest]) -> dict[tuple[str, str], str]:
    """{(namespace, name): why} of the Services the objects point at in namespaces they do not
    create: an ExternalName Service's target (the wake Service: the HTTP add-on's interceptor
    proxy) and a KEDA trigger's scalerAddress (the add-on's external scaler)."""
    manifests = list(manifests)
    created = {m["metadata"]["name"] for m in manifests if m.get("kind") == "Namespace"}
    out: dict[tuple[str, str], str] = {}
    for m in manifests:
        spec = m.get("spec") or {}
        if m.get("kind") == "Service" and spec.get("type") == "ExternalName":
            target = _service_host(str(spec.get("externalName", "")))
            if target is not None:
                out[target] = f"the target of {_owner(m)}"
        if m.get("kind") == "ScaledObject":
            for trigger in spec.get("triggers", []):
                address = (trigger.get("metadata") or {}).get("scalerAddress")
                target = _service_host(str(address)) if address else None
                if target is not None:
                    out[target] = f"the scaler of {_owner(m)}'s {trigger.get('type')} trigger"
    return {k: v for k, v in out.items() if k[0] not in created}


def _monitor_requirements(manifests: Sequence[Manifest]) -> list[Requirement]:
    """A Prometheus scrapes a monitor only if its selectors match it: the monitors' labels (a
    stock kube-prometheus-stack selects `release: <its release name>`, set by
    serving.monitor_labels), and the pods a PodMonitor selects must run."""
    monitors = [m for m in manifests if m.get("kind") in ("ServiceMonitor", "PodMonitor")]
    out = []
    for kind in ("ServiceMonitor", "PodMonitor"):
        mine = [m for m in monitors if m["kind"] == kind]
        if not mine:
            continue
        labels = sorted(
            {f"{k}={v}" for m in mine for k, v in m["metadata"].get("labels", {}).items()}
        )
        release = any(m["metadata"].get("labels", {}).get("release") for m in mine)
        hint = (
            ""
            if release
            else "; they carry no `release` label, which a stock kube-prometheus-stack's "
            "selector requires (its release name): set serving.monitor_labels.release, or KEDA's "
            "query reads no series and the workload never scales"
        )
        field = "serviceMonitorSelector" if kind == "ServiceMonitor" else "podMonitorSelector"
        out.append(
            Requirement(
                f"{kind.lower()}-selection",
                f"a Prometheus' {field} matches the {kind}s' labels ({', '.join(labels)}){hint}",
                _kubectl(
                    "get",
                    "prometheus",
                    "-A",
                    "-o",
                    f"custom-columns=NAME:.metadata.name,SELECTOR:.spec.{field},"
                    f"NAMESPACES:.spec.{field.replace('Selector', '')}NamespaceSelector",
                ),
            )
        )
    for m in monitors:
        if m["kind"] != "PodMonitor":
            continue
        pods = _selector_text(m["spec"].get("selector", {}).get("matchLabels", {}))
        out.append(
            Requirement(
                f"pods:{pods}",
                f"pods labelled {pods} run on the Trn2 nodes ({_owner(m)} scrapes them: the "
                "neuron-monitor DaemonSet)",
                _kubectl("get", "pods", "-A", "-l", pods, "-o", "wide"),
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


#: Taint effects a Node may carry (core/v1 TaintEffect).
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_AS_KUBECTL_WRITES = "must be an object, as `kubectl get nodes -o json` writes it"


def _mapping(value: object, at: str, fix: str) -> dict[str, Any]:
    """A JSON object, or {} for an absent or null one; BoundaryError for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BoundaryError(at, value, fix)
    return value


def _labels(value: object, at: str) -> dict[str, str]:
    """Labels: a mapping of text to text (Kubernetes' map[string]string)."""
    labels = _mapping(value, at, "labels must be a mapping of text to text")
    for key, text in labels.items():
        if not isinstance(text, str):
            raise BoundaryError(f"{at}.{key}", text, "a label value must be text")
    return labels


def _taints(value: object, at: str, effects: Mapping[str, str]) -> tuple[dict[str, str], ...]:
    """Taints: a list of objects with a text `key`, an optional text `value` and an `effect`
    among `effects` (as written -> as a Node spells it); only those three are kept."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BoundaryError(at, value, "taints must be a list of {key, value, effect} objects")
    out = []
    for i, taint in enumerate(value):
        here = f"{at}[{i}]"
        taint = _mapping(taint, here, "a taint must be an object {key, value, effect}")
        key, text, effect = taint.get("key"), taint.get("value"), taint.get("effect")
        if not isinstance(key, str) or not key:
            raise BoundaryError(f"{here}.key", key, "a taint needs its key as text")
        if text is not None and not isinstance(text, str):
            raise BoundaryError(f"{here}.value", text, "a taint's value must be text")
        if not isinstance(effect, str) or effect not in effects:
            raise BoundaryError(f"{here}.effect", effect, f"give one of {', '.join(effects)}")
        out.append(
            {"key": key, "effect": effects[effect], **({"value": text} if text is not None else {})}
        )
    return tuple(out)


def parse_nodes(document: object, field: str = "--nodes") -> list[Node]:
    """The nodes of a `kubectl get nodes -o json` document (a List with `items`, or one Node),
    every field the checks read typed as Kubernetes types it; BoundaryError naming the field,
    the item and the value for anything else."""
    if isinstance(document, dict) and document.get("kind") == "Node":
        document = {"items": [document]}
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise BoundaryError(
            field, type(document).__name__, "not `kubectl get nodes -o json` output (no items)"
        )
    effects = {e: e for e in _TAINT_EFFECTS}
    nodes = []
    for i, item in enumerate(document["items"]):
        at = f"{field} items[{i}]"
        item = _mapping(item, at, "not a Node: give `kubectl get nodes -o json` output")
        meta = _mapping(item.get("metadata"), f"{at}.metadata", _AS_KUBECTL_WRITES)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise BoundaryError(f"{at}.metadata.name", name, "not a Node: no name")
        spec = _mapping(item.get("spec"), f"{at}.spec", _AS_KUBECTL_WRITES)
        status = _mapping(item.get("status"), f"{at}.status", _AS_KUBECTL_WRITES)
        allocatable = _mapping(
            status.get("allocatable"), f"{at}.status.allocatable", _AS_KUBECTL_WRITES
        )
        devices = allocatable.get(NEURON_DEVICE_RESOURCE, "0")
        nodes.append(
            Node(
                name=name,
                labels=_labels(meta.get("labels"), f"{at}.metadata.labels"),
                taints=_taints(spec.get("taints"), f"{at}.spec.taints", effects),
                neuron_devices=int_text(
                    str(devices), f"{at}.status.allocatable.{NEURON_DEVICE_RESOURCE}", lo=0
                ),
            )
        )
    return nodes


def _names(nodes: Sequence[Node]) -> str:
    shown = ", ".join(n.name for n in nodes[:5])
    return shown + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")


def no_node_up(manifests: Sequence[Manifest], nodes: Sequence[Node]) -> str | None:
    """Why the node checks cannot tell on `nodes`: no node of the instance type the pods select
    is up (a Trn2 group resting at zero, its normal state with scale to zero); None when one is."""
    wanted = pod_ask(manifests).node_selector.get(INSTANCE_TYPE_LABEL)
    if wanted is None or any(n.labels.get(INSTANCE_TYPE_LABEL) == wanted for n in nodes):
        return None
    return (
        f"no {wanted} node up ({len(nodes)} node(s) read; a Trn2 group at zero has none): the "
        "checks need a node or a node group template (--node-group: `aws eks describe-nodegroup` "
        "output)"
    )


def evaluate(manifests: Sequence[Manifest], nodes: Sequence[Node]) -> list[NodeCheck]:
    """The node-side requirements on `nodes`: the labels on some node; the Neuron devices and
    the tolerated taints on some node carrying those labels. With no node of the selected
    instance type up, every one is `no-node` (not a failure: the group may rest at zero)."""
    by_key = {r.key: r for r in requirements(manifests) if r.node_side}
    unknown = no_node_up(manifests, nodes)
    if unknown is not None:
        return [NodeCheck(r, "no-node", unknown) for r in by_key.values()]
    return _evaluate(manifests, nodes, by_key)


def _evaluate(
    manifests: Sequence[Manifest], nodes: Sequence[Node], by_key: Mapping[str, Requirement]
) -> list[NodeCheck]:
    ask = pod_ask(manifests)
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

    def outcome(ok: bool) -> Outcome:
        return "pass" if ok else "fail"

    return [
        NodeCheck(
            by_key["neuron-device"],
            outcome(bool(enough)),
            f"{len(enough)} node(s): {_names(enough)}"
            if enough
            else (none if not selected else f"at most {most} on {_names(selected)}"),
        ),
        NodeCheck(
            by_key["node-labels"],
            outcome(bool(selected)),
            f"{len(selected)} node(s): {_names(selected)}" if selected else none,
        ),
        NodeCheck(
            by_key["node-taints"],
            outcome(bool(tolerated)),
            f"{len(tolerated)} node(s): {_names(tolerated)}"
            if tolerated
            else (none if not selected else f"an untolerated taint on {_names(selected)}"),
        ),
    ]


#: `aws eks describe-nodegroup` spells taint effects in upper snake case.
_EKS_TAINT_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}


def parse_node_group(document: object, field: str = "--node-group") -> list[Node]:
    """The nodes a managed node group would start (`aws eks describe-nodegroup --output json`):
    one per instance type, with the group's labels and taints, the instance-type label the
    kubelet sets, and the Neuron devices of the type (the chips of trnspec's instance table; the
    device plugin must advertise them). BoundaryError naming the field for anything else."""
    group = document.get("nodegroup") if isinstance(document, dict) else None
    if not isinstance(group, dict) or not isinstance(group.get("instanceTypes"), list):
        raise BoundaryError(
            field,
            type(document).__name__,
            "not `aws eks describe-nodegroup` output (no nodegroup.instanceTypes)",
        )
    name = group.get("nodegroupName", "nodegroup")
    if not isinstance(name, str) or not name:
        raise BoundaryError(f"{field} nodegroup.nodegroupName", name, "the group's name is text")
    for i, kind in enumerate(group["instanceTypes"]):
        if not isinstance(kind, str) or not kind:
            raise BoundaryError(
                f"{field} nodegroup.instanceTypes[{i}]", kind, "an instance type is text"
            )
    labels = _labels(group.get("labels"), f"{field} nodegroup.labels")
    taints = _taints(group.get("taints"), f"{field} nodegroup.taints", _EKS_TAINT_EFFECTS)
    return [
        Node(
            name=f"{name} template ({kind})",
            labels={**labels, INSTANCE_TYPE_LABEL: kind},
            taints=taints,
            neuron_devices=instance(kind).chips if kind in INSTANCE_TYPES else 0,
        )
        for kind in group["instanceTypes"]
    ]
