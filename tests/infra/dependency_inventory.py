"""What the workload asks of the cluster, what the stacks install, and what is missing.

Pure functions over synthesized CloudFormation templates (no CDK objects), so a test can feed
them the templates of any profile, or a template with one provider removed.

A *requirement* is something a Kubernetes object names and the cluster must provide: a
StorageClass (and the CSI driver behind it), a CRD kind, a scheduler, a load-balancer controller,
a Pod Identity association, a Prometheus metric. A *provider* is the template resource that
installs it (an EKS add-on, a Helm chart, a manifest). A requirement is met when a provider
exists and is installed first: in an earlier stack, or reachable through the consumer's
DependsOn chain in the same template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
ADDON = "AWS::EKS::Addon"
POD_IDENTITY = "AWS::EKS::PodIdentityAssociation"

#: API groups served by Kubernetes itself (no CRD needed).
BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "resource.k8s.io",
    }
)

#: Which chart ships which CRD kind (from each chart's crds/ or templates at the pinned version:
#: kedacore/charts keda/templates/crds, prometheus-community kube-prometheus-stack
#: charts/crds, aws/karpenter-provider-aws charts/karpenter-crd).
CRD_PROVIDERS: dict[tuple[str, str], frozenset[str]] = {
    ("keda.sh", "ScaledObject"): frozenset({"keda"}),
    ("keda.sh", "TriggerAuthentication"): frozenset({"keda"}),
    # kedacore/charts http-add-on templates/crds (chart 0.15.0).
    ("http.keda.sh", "InterceptorRoute"): frozenset({"keda-add-ons-http"}),
    ("monitoring.coreos.com", "ServiceMonitor"): frozenset({"kube-prometheus-stack"}),
    ("monitoring.coreos.com", "PodMonitor"): frozenset({"kube-prometheus-stack"}),
    ("monitoring.coreos.com", "PrometheusRule"): frozenset({"kube-prometheus-stack"}),
    ("karpenter.sh", "NodePool"): frozenset({"karpenter-crd", "karpenter"}),
    ("karpenter.k8s.aws", "EC2NodeClass"): frozenset({"karpenter-crd", "karpenter"}),
}

#: The EBS CSI driver's provisioner name (kubernetes-sigs/aws-ebs-csi-driver docs).
EBS_PROVISIONER = "ebs.csi.aws.com"
#: Provisioners EKS itself serves without an add-on: none (in-tree EBS was removed in 1.27).
#: Service annotation prefix / loadBalancerClass the AWS Load Balancer Controller handles.
LBC_ANNOTATION_PREFIX = "service.beta.kubernetes.io/aws-load-balancer-"
LBC_CLASS = "service.k8s.aws/nlb"
DEFAULT_SCHEDULER = "default-scheduler"
NEURON_RESOURCE = "aws.amazon.com/neuron"

_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_PROMQL_WORDS = frozenset(
    {
        "sum",
        "avg",
        "max",
        "min",
        "count",
        "rate",
        "irate",
        "increase",
        "by",
        "without",
        "or",
        "and",
        "unless",
        "on",
        "ignoring",
        "vector",
        "scalar",
        "histogram_quantile",
        "le",
        "bool",
    }
)


def flatten(value: Any) -> str:
    """A CloudFormation string expression as text; references become ${...} placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(flatten(p) for p in parts)
        if "Ref" in value:
            return "${" + value["Ref"] + "}"
        if "Fn::GetAtt" in value:
            att = value["Fn::GetAtt"]
            return "${" + (".".join(att) if isinstance(att, list) else att) + "}"
        if "Fn::ImportValue" in value:
            return "${Import:" + flatten(value["Fn::ImportValue"]) + "}"
        if "Fn::Sub" in value:
            sub = value["Fn::Sub"]
            return sub if isinstance(sub, str) else sub[0]
        if "Fn::Select" in value:
            return "${Select}"
    return json.dumps(value)


@dataclass(frozen=True)
class Resource:
    """One template resource, addressed by stack index and logical id."""

    stack: int
    logical_id: str
    type: str
    properties: dict[str, Any]
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class KubeObject:
    """One Kubernetes object applied by a manifest resource."""

    doc: dict[str, Any]
    applied_by: Resource


@dataclass(frozen=True)
class Chart:
    """One Helm release."""

    name: str
    values: dict[str, Any]
    resource: Resource


@dataclass
class Inventory:
    """Everything the stacks install, in stack order (index 0 deploys first)."""

    resources: list[Resource] = field(default_factory=list)

    @classmethod
    def of(cls, templates: Iterable[dict[str, Any]]) -> Inventory:
        inv = cls()
        for i, template in enumerate(templates):
            for lid, res in template.get("Resources", {}).items():
                dep = res.get("DependsOn", [])
                deps = tuple([dep] if isinstance(dep, str) else dep)
                inv.resources.append(Resource(i, lid, res["Type"], res.get("Properties", {}), deps))
        return inv

    def of_type(self, cfn_type: str) -> list[Resource]:
        return [r for r in self.resources if r.type == cfn_type]

    def objects(self) -> list[KubeObject]:
        return [
            KubeObject(doc, r)
            for r in self.of_type(MANIFEST)
            for doc in json.loads(flatten(r.properties["Manifest"]))
        ]

    def charts(self) -> list[Chart]:
        out = []
        for r in self.of_type(HELM):
            raw = r.properties.get("Values")
            values = json.loads(flatten(raw)) if raw else {}
            out.append(Chart(r.properties["Chart"], values, r))
        return out

    def addons(self) -> dict[str, Resource]:
        return {r.properties["AddonName"]: r for r in self.of_type(ADDON)}

    def installed_before(self, provider: Resource, consumer: Resource) -> bool:
        """True when CloudFormation creates `provider` before `consumer`."""
        if provider.stack != consumer.stack:
            return provider.stack < consumer.stack
        seen: set[str] = set()
        todo = list(consumer.depends_on)
        by_id = {r.logical_id: r for r in self.resources if r.stack == consumer.stack}
        while todo:
            lid = todo.pop()
            if lid == provider.logical_id:
                return True
            if lid in seen or lid not in by_id:
                continue
            seen.add(lid)
            todo.extend(by_id[lid].depends_on)
        return False


@dataclass(frozen=True)
class Need:
    """One thing a consumer names that something must provide."""

    kind: str
    name: str
    consumer: Resource
    where: str


def _pod_specs(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = doc.get("kind")
    spec = doc.get("spec", {})
    if kind in {"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"}:
        yield spec.get("template", {}).get("spec", {})
    elif kind == "CronJob":
        yield spec.get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec", {})
    elif kind == "Pod":
        yield spec


def _where(obj: KubeObject) -> str:
    meta = obj.doc.get("metadata", {})
    return f"{obj.doc.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"


def needs_of_objects(objects: list[KubeObject]) -> list[Need]:
    """Storage classes, CRD kinds, schedulers, devices, controllers and identities named by the
    workload objects."""
    out: list[Need] = []
    for obj in objects:
        doc, res, where = obj.doc, obj.applied_by, _where(obj)
        group = doc.get("apiVersion", "v1").rpartition("/")[0]
        if group not in BUILTIN_GROUPS:
            out.append(Need("crd", f"{group}/{doc.get('kind')}", res, where))
        if doc.get("kind") == "PersistentVolumeClaim":
            out.append(Need("storage-class", doc["spec"].get("storageClassName", ""), res, where))
        if doc.get("kind") == "Service":
            spec, ann = doc.get("spec", {}), doc.get("metadata", {}).get("annotations", {})
            if spec.get("loadBalancerClass") == LBC_CLASS or any(
                k.startswith(LBC_ANNOTATION_PREFIX) for k in ann
            ):
                out.append(Need("controller", "aws-load-balancer-controller", res, where))
        for pod in _pod_specs(doc):
            out.append(Need("scheduler", pod.get("schedulerName", DEFAULT_SCHEDULER), res, where))
            for vol in pod.get("volumes", []):
                claim = vol.get("ephemeral", {}).get("volumeClaimTemplate", {}).get("spec")
                if claim is not None:
                    out.append(Need("storage-class", claim.get("storageClassName", ""), res, where))
            for c in pod.get("containers", []):
                requests = c.get("resources", {}).get("requests", {})
                if NEURON_RESOURCE in requests:
                    out.append(Need("device", NEURON_RESOURCE, res, where))
            account = pod.get("serviceAccountName")
            if account and doc.get("metadata", {}).get("namespace") not in {"kube-system"}:
                ns = doc["metadata"].get("namespace", "default")
                out.append(Need("pod-identity", f"{ns}/{account}", res, where))
    return out


def needs_of_charts(charts: list[Chart]) -> list[Need]:
    """What the platform's own charts ask of the cluster (Prometheus' persistent volume)."""
    out = []
    for chart in charts:
        if chart.name != "kube-prometheus-stack":
            continue
        storage = chart.values.get("prometheus", {}).get("prometheusSpec", {}).get("storageSpec")
        if storage:
            template = storage.get("volumeClaimTemplate", {}).get("spec", {})
            out.append(
                Need(
                    "storage-class",
                    template.get("storageClassName", ""),
                    chart.resource,
                    "kube-prometheus-stack prometheusSpec.storageSpec",
                )
            )
    return out


def metric_names(query: str) -> set[str]:
    """Metric names in a PromQL expression (label matchers and functions removed)."""
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", query)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r'"[^"]*"', "", text)
    names = set()
    for m in _METRIC.finditer(text):
        word = m.group(0)
        end = m.end()
        follows_paren = text[end : end + 1] == "("
        if word in _PROMQL_WORDS or follows_paren or word.replace(".", "").isdigit():
            continue
        names.add(word)
    return names


def query_is_served(query: str, emitted: set[str]) -> bool:
    """True if some `or` alternative of the query uses only emitted series."""
    return any(metric_names(alt) <= emitted for alt in query.split(" or ") if metric_names(alt))


def exposition_names(families: dict[str, str]) -> set[str]:
    """Series names a Prometheus client exposes for metric families {name: type}."""
    out: set[str] = set()
    for name, kind in families.items():
        if kind == "counter":
            out |= {f"{name}_total"}
        elif kind == "histogram":
            out |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        else:
            out.add(name)
    return out


def unmet(inventory: Inventory) -> list[str]:
    """Every requirement with no provider, or with a provider installed after its consumer."""
    objects = inventory.objects()
    charts = inventory.charts()
    addons = inventory.addons()
    needs = needs_of_objects(objects) + needs_of_charts(charts)
    problems: list[str] = []

    def check(need: Need, providers: list[Resource], what: str) -> None:
        if not providers:
            problems.append(f"{need.where}: {need.kind} {need.name!r} has no provider ({what})")
        elif not any(inventory.installed_before(p, need.consumer) for p in providers):
            ids = ", ".join(p.logical_id for p in providers)
            problems.append(
                f"{need.where}: {need.kind} {need.name!r} is provided by {ids}, "
                "which is not installed before it"
            )

    classes = {o.doc["metadata"]["name"]: o for o in objects if o.doc.get("kind") == "StorageClass"}
    associations = {
        f"{r.properties['Namespace']}/{r.properties['ServiceAccount']}": r
        for r in inventory.of_type(POD_IDENTITY)
    }
    for need in needs:
        if need.kind == "storage-class":
            sc = classes.get(need.name)
            check(need, [sc.applied_by] if sc else [], "a StorageClass manifest")
            if sc and sc.doc.get("provisioner") == EBS_PROVISIONER:
                driver = addons.get("aws-ebs-csi-driver")
                check(
                    Need("csi-driver", EBS_PROVISIONER, need.consumer, need.where),
                    [driver] if driver else [],
                    "the aws-ebs-csi-driver EKS add-on",
                )
        elif need.kind == "crd":
            group, _, kind = need.name.rpartition("/")
            wanted = CRD_PROVIDERS.get((group, kind), frozenset())
            found = [c.resource for c in charts if c.name in wanted]
            check(need, found, f"a chart shipping {kind}: {sorted(wanted) or 'unknown'}")
        elif need.kind == "scheduler":
            if need.name == DEFAULT_SCHEDULER:
                continue
            found = [
                c.resource
                for c in charts
                if c.name == "neuron-helm-chart"
                and c.values.get("scheduler", {}).get("enabled")
                and c.values["scheduler"].get("customScheduler", {}).get("fullnameOverride")
                == need.name
            ]
            check(need, found, "the Neuron chart's scheduler extension under that name")
        elif need.kind == "device":
            found = [
                c.resource
                for c in charts
                if c.name == "neuron-helm-chart"
                and c.values.get("devicePlugin", {}).get("enabled", True)
            ]
            check(need, found, "the Neuron device plugin")
        elif need.kind == "controller":
            found = [c.resource for c in charts if c.name == need.name]
            check(need, found, "the AWS Load Balancer Controller chart")
        elif need.kind == "pod-identity":
            assoc = associations.get(need.name)
            check(need, [assoc] if assoc else [], "a Pod Identity association")
            agent = addons.get("eks-pod-identity-agent")
            check(
                Need("addon", "eks-pod-identity-agent", need.consumer, need.where),
                [agent] if agent else [],
                "the eks-pod-identity-agent add-on",
            )
    return problems


def keda_queries(inventory: Inventory) -> list[str]:
    """PromQL of every KEDA Prometheus trigger the stacks apply."""
    return [
        t["metadata"]["query"]
        for o in inventory.objects()
        if o.doc.get("kind") == "ScaledObject"
        for t in o.doc["spec"].get("triggers", [])
        if t.get("type") == "prometheus"
    ]
