"""What the Kubernetes API server checks that the OpenAPI schemas do not, run on manifests at synth.

kubernetes-validate (and the API's own OpenAPI schemas) type a resource Quantity, an object name
and a label value as bare strings, so `"storage": "NoneGi"` passes them and is refused only by
the API server, at deploy, after the stacks before it have been deployed. This module checks the
same rules on plain manifests (dicts), pure and offline:

- every Quantity (container requests and limits, pod overhead, emptyDir `sizeLimit`, claim and
  volume-claim-template `resources`) matches apimachinery's grammar (`resource.ParseQuantity`);
- object names are DNS-1123 subdomains, or labels (at most 63 characters) for the kinds whose
  name becomes a label, a host name or a path segment (Namespace; Job: its name is the
  `job-name` label; Service: an RFC 1035 label); container, volume and port names follow their
  own rules;
- label keys and values (metadata, pod templates, selectors, nodeSelector) are valid, and a
  workload's selector selects its own pod template;
- no container requests more than its limit, and an extended resource (aws.amazon.com/neuron)
  is requested exactly at its limit;
- no Python rendering of None, True, False, nan or inf sits in any string (except the source of
  a program a container runs with `python -c`, which is code, not a rendered value);
- every ConfigMap, Secret, PersistentVolumeClaim, ServiceAccount and StorageClass a pod names,
  and the workload a KEDA ScaledObject scales, is among the manifests, or in `provided` (created
  by the app beside them or by a chart it installs), unless the reference is `optional`.

Each finding is one line naming the object, the path in it, the value and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trnspec.boundary.problems import Problem

#: apimachinery `resource.ParseQuantity` (k8s.io/apimachinery/pkg/api/resource/quantity.go).
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
#: What a label name or value may hold (besides being empty, for a value).
_LABEL_CHARS = "1-63 alphanumerics, '-', '_' or '.', alphanumeric at both ends"
#: Python's str() of None, True, False, nan and inf: what an f-string makes of a missing or
#: non-finite value. Not inside a longer word ("Nonetheless", "info", "nano").
_LEAK = re.compile(r"(?<![A-Za-z])(None|True|False|nan|inf)(?![a-z])")

#: Kinds whose name must be a DNS-1123 label (63 characters), not a subdomain.
_LABEL_NAMED = frozenset({"Namespace", "Job", "CronJob"})
#: Kinds whose name must be an RFC 1035 label (a DNS name segment that starts with a letter).
_DNS1035_NAMED = frozenset({"Service"})
#: Cluster-scoped kinds among those a pod can name.
_CLUSTER_SCOPED = frozenset({"Namespace", "StorageClass", "PersistentVolume"})
#: Kinds that carry a pod template at spec.template (CronJob one level deeper).
_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


@dataclass(frozen=True, order=True)
class ObjectRef:
    """An object a pod can name; `namespace` is None for a cluster-scoped kind."""

    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def finding(obj: str, path: str, value: object, rule: str) -> Problem:
    """One thing the API server would refuse (or a pod would wait on forever), as the Problem
    every layer reports: its field is the manifest's `Kind/name` and the dotted path in it
    (`spec.template.spec.volumes.0.ephemeral...`), its fix the rule."""
    return Problem(f"{obj} {path}", value, rule)


def is_quantity(value: object) -> bool:
    """A Quantity as the API server reads it: a JSON number, or a string of the grammar."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == value and value not in (float("inf"), float("-inf"))
    return isinstance(value, str) and QUANTITY.match(value) is not None


_SUFFIX = {
    **{f"{p}i": Decimal(1024) ** (i + 1) for i, p in enumerate("KMGTPE")},
    **{p: Decimal(1000) ** (i + 1) for i, p in enumerate("kMGTPE")},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
}


def quantity_value(value: object) -> Decimal | None:
    """The number a Quantity stands for (`40Gi` -> 42949672960), None when it is not one."""
    if not is_quantity(value):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    assert isinstance(value, str)
    m = QUANTITY.match(value)
    assert m is not None
    number, suffix = m[1], m[3] or ""
    sign = -1 if value.startswith("-") else 1
    if suffix[:1] in ("e", "E"):
        return sign * Decimal(number) * Decimal(10) ** int(suffix[1:])
    return sign * Decimal(number) * _SUFFIX[suffix]


def _resource_findings(container: dict[str, Any]) -> Iterator[tuple[str, object, str]]:
    """(path under the container, value, rule): a request above its limit, and an extended
    resource (a name with a domain, e.g. aws.amazon.com/neuron) whose request is not its limit."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for name, request in requests.items():
        wanted, cap = quantity_value(request), quantity_value(limits.get(name))
        extended = "/" in name and not name.startswith(("kubernetes.io/", "requests."))
        if extended and name not in limits:
            yield (
                f"resources.limits.{name}",
                None,
                "an extended resource needs a limit equal to its request",
            )
        elif wanted is not None and cap is not None:
            if extended and wanted != cap:
                yield (
                    f"resources.requests.{name}",
                    request,
                    f"an extended resource's request must equal its limit ({limits[name]})",
                )
            elif wanted > cap:
                yield (
                    f"resources.requests.{name}",
                    request,
                    f"must be less than or equal to the limit ({limits[name]})",
                )


def _selector_findings(manifest: dict[str, Any]) -> Iterator[tuple[str, object, str]]:
    """A workload's selector must select its own pod template (the API server refuses the
    object otherwise); a Job's is generated, so only a given one is checked."""
    spec = manifest.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels")
    if selector is None:
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for key, value in selector.items():
        if labels.get(key) != value:
            yield (
                f"spec.selector.matchLabels.{key}",
                value,
                "`selector` does not match template `labels`",
            )


def _label_key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "a label key's prefix must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return f"a label key's name must be {_LABEL_CHARS}"
    return None


def _label_value_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "a label value must be a string"
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        return f"a label value must be empty or {_LABEL_CHARS}"
    return None


def _walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, str(i)))


def _python_programs(manifest: dict[str, Any]) -> frozenset[tuple[str, ...]]:
    """Paths of the strings that are Python source: the argument after `-c` in a container
    command that starts with a python interpreter."""
    out = set()
    for path, node in _walk(manifest):
        if not (path and path[-1] == "command" and isinstance(node, list) and node):
            continue
        if isinstance(node[0], str) and node[0].rpartition("/")[2].startswith("python"):
            out |= {(*path, str(i + 1)) for i, a in enumerate(node[:-1]) if a == "-c"}
    return frozenset(out)


def _is_quantity_path(path: tuple[str, ...]) -> bool:
    if not path:
        return False
    if path[-1] == "sizeLimit":
        return True
    if len(path) >= 3 and path[-3] == "resources" and path[-2] in ("requests", "limits"):
        return True
    return len(path) >= 2 and path[-2] == "overhead"


def _is_label_map(path: tuple[str, ...]) -> bool:
    if not path:
        return False
    return path[-1] in ("labels", "matchLabels", "nodeSelector") and "data" not in path


def _name_problem(kind: str, name: object) -> str | None:
    if not isinstance(name, str) or not name:
        return "every object needs a name"
    if kind in _DNS1035_NAMED:
        if len(name) > 63 or not _DNS1035_LABEL.match(name):
            return f"a {kind} name must be an RFC 1035 label (a-z first, a-z0-9-, at most 63)"
    elif kind in _LABEL_NAMED:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return f"a {kind} name must be a DNS-1123 label (a-z0-9-, at most 63)"
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return "a name must be a DNS-1123 subdomain (a-z0-9-., at most 253)"
    return None


def _port_name_problem(name: object) -> str | None:
    if not isinstance(name, str):
        return "a port name must be a string"
    if (
        len(name) > 15
        or not _IANA_SVC_NAME.match(name)
        or "--" in name
        or not re.search("[a-z]", name)
    ):
        return "a port name must be an IANA service name (a-z0-9-, a letter, no '--', at most 15)"
    return None


def _pod_spec(manifest: dict[str, Any]) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    if kind == "Pod":
        return ("spec",), spec
    if kind in _WORKLOADS:
        return ("spec", "template", "spec"), (spec.get("template") or {}).get("spec") or {}
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        path = ("spec", "jobTemplate", "spec", "template", "spec")
        return path, (job.get("template") or {}).get("spec") or {}
    return None


def _pod_references(pod: dict[str, Any], namespace: str | None) -> Iterator[tuple[str, ObjectRef]]:
    """(path in the pod spec, what it names) for every required reference."""

    def ns(kind: str, name: str) -> ObjectRef:
        return ObjectRef(kind, name, None if kind in _CLUSTER_SCOPED else namespace)

    yield "serviceAccountName", ns("ServiceAccount", pod.get("serviceAccountName") or "default")
    for i, secret in enumerate(pod.get("imagePullSecrets") or []):
        yield f"imagePullSecrets.{i}.name", ns("Secret", secret.get("name", ""))
    for i, vol in enumerate(pod.get("volumes") or []):
        at = f"volumes.{i}"
        if (cm := vol.get("configMap")) and not cm.get("optional"):
            yield f"{at}.configMap.name", ns("ConfigMap", cm.get("name", ""))
        if (sec := vol.get("secret")) and not sec.get("optional"):
            yield f"{at}.secret.secretName", ns("Secret", sec.get("secretName", ""))
        if claim := vol.get("persistentVolumeClaim"):
            yield (
                f"{at}.persistentVolumeClaim.claimName",
                ns("PersistentVolumeClaim", claim.get("claimName", "")),
            )
        for j, source in enumerate((vol.get("projected") or {}).get("sources") or []):
            for key, kind in (("configMap", "ConfigMap"), ("secret", "Secret")):
                if (ref := source.get(key)) and not ref.get("optional"):
                    yield f"{at}.projected.sources.{j}.{key}.name", ns(kind, ref.get("name", ""))
        template = (vol.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
        if (cls := (template.get("spec") or {}).get("storageClassName")) is not None:
            yield (
                f"{at}.ephemeral.volumeClaimTemplate.spec.storageClassName",
                ns("StorageClass", cls),
            )
    for group in ("initContainers", "containers"):
        for i, c in enumerate(pod.get(group) or []):
            at = f"{group}.{i}"
            for j, source in enumerate(c.get("envFrom") or []):
                for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    if (ref := source.get(key)) and not ref.get("optional"):
                        yield f"{at}.envFrom.{j}.{key}.name", ns(kind, ref.get("name", ""))
            for j, env in enumerate(c.get("env") or []):
                source = env.get("valueFrom") or {}
                for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                    if (ref := source.get(key)) and not ref.get("optional"):
                        yield f"{at}.env.{j}.valueFrom.{key}.name", ns(kind, ref.get("name", ""))


def _references(manifest: dict[str, Any]) -> Iterator[tuple[str, ObjectRef]]:
    """(dotted path, what it names) for the objects a manifest cannot work without: what its pod
    template names, and the workload a KEDA ScaledObject scales."""
    namespace = (manifest.get("metadata") or {}).get("namespace")
    found = _pod_spec(manifest)
    if found is not None:
        base, pod = found
        for path, ref in _pod_references(pod, namespace):
            yield ".".join((*base, path)), ref
    if manifest.get("kind") == "ScaledObject":
        target = (manifest.get("spec") or {}).get("scaleTargetRef") or {}
        kind = target.get("kind", "Deployment")
        yield "spec.scaleTargetRef.name", ObjectRef(kind, target.get("name", ""), namespace)


def _provides(manifest: dict[str, Any]) -> ObjectRef | None:
    meta = manifest.get("metadata") or {}
    kind, name = manifest.get("kind"), meta.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    return ObjectRef(kind, name, None if kind in _CLUSTER_SCOPED else meta.get("namespace"))


def _object_findings(manifest: dict[str, Any]) -> Iterator[Problem]:
    kind = str(manifest.get("kind", "?"))
    meta = manifest.get("metadata") or {}
    obj = f"{kind}/{meta.get('name', '?')}"
    if problem := _name_problem(kind, meta.get("name")):
        yield finding(obj, "metadata.name", meta.get("name"), problem)
    if (namespace := meta.get("namespace")) is not None and (
        problem := _name_problem("Namespace", namespace)
    ):
        yield finding(obj, "metadata.namespace", namespace, problem)
    programs = _python_programs(manifest)
    for path, node in _walk(manifest):
        dotted = ".".join(path)
        if isinstance(node, str) and path not in programs and (leak := _LEAK.search(node)):
            yield finding(
                obj,
                dotted,
                node
                if len(node) <= 80
                else f"...{node[max(0, leak.start() - 30) : leak.end() + 30]}...",
                f"Python's {leak.group(1)} rendered into a string: a value was missing or "
                "not finite when the manifest was built",
            )
        if _is_quantity_path(path) and not is_quantity(node):
            yield finding(obj, dotted, node, "not a Kubernetes Quantity (e.g. 40Gi, 500m, 2)")
        if _is_label_map(path) and isinstance(node, dict):
            for key, value in node.items():
                for problem in (_label_key_problem(str(key)), _label_value_problem(value)):
                    if problem:
                        yield finding(obj, f"{dotted}.{key}", value, problem)
        if path and path[-1] in ("containers", "initContainers") and isinstance(node, list):
            for i, c in enumerate(node):
                name = c.get("name") if isinstance(c, dict) else None
                if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.match(name):
                    yield finding(
                        obj, f"{dotted}.{i}.name", name, "a container name must be a DNS-1123 label"
                    )
                for j, port in enumerate((c.get("ports") or []) if isinstance(c, dict) else []):
                    if "name" in port and (problem := _port_name_problem(port["name"])):
                        yield finding(obj, f"{dotted}.{i}.ports.{j}.name", port["name"], problem)
        if path and path[-1] in ("containers", "initContainers") and isinstance(node, list):
            for i, c in enumerate(node):
                if isinstance(c, dict):
                    for where, value, rule in _resource_findings(c):
                        yield finding(obj, f"{dotted}.{i}.{where}", value, rule)
        if path and path[-1] == "volumes" and isinstance(node, list):
            for i, vol in enumerate(node):
                name = vol.get("name") if isinstance(vol, dict) else None
                if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.match(name):
                    yield finding(
                        obj, f"{dotted}.{i}.name", name, "a volume name must be a DNS-1123 label"
                    )
    if kind in _WORKLOADS:
        for where, value, rule in _selector_findings(manifest):
            yield finding(obj, where, value, rule)
    if kind == "Service":
        # A Service's selector is a plain label map (a workload's has matchLabels).
        for key, value in ((manifest.get("spec") or {}).get("selector") or {}).items():
            for problem in (_label_key_problem(str(key)), _label_value_problem(value)):
                if problem:
                    yield finding(obj, f"spec.selector.{key}", value, problem)
        for i, port in enumerate((manifest.get("spec") or {}).get("ports") or []):
            if "name" in port and (problem := _port_name_problem(port["name"])):
                yield finding(obj, f"spec.ports.{i}.name", port["name"], problem)


def api_server_findings(
    manifests: Sequence[dict[str, Any]], provided: Iterable[ObjectRef] = ()
) -> list[Problem]:
    """Everything in `manifests` the API server would refuse, and every object a pod names that
    neither `manifests` nor `provided` creates (a pod waiting on it forever)."""
    findings: list[Problem] = []
    exists = set(provided)
    exists.update(ref for m in manifests if (ref := _provides(m)) is not None)
    for manifest in manifests:
        findings.extend(_object_findings(manifest))
        meta = manifest.get("metadata") or {}
        for path, ref in _references(manifest):
            if ref.kind == "ServiceAccount" and ref.name == "default":
                continue  # every namespace has one
            if ref not in exists:
                findings.append(
                    finding(
                        f"{manifest.get('kind')}/{meta.get('name')}",
                        path,
                        ref.name,
                        f"names {ref}, which neither the app nor a chart it installs creates",
                    )
                )
    return findings
