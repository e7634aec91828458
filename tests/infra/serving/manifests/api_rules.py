"""What the Kubernetes API server refuses that the OpenAPI schemas (kubernetes-validate) let
through, on plain manifests: fields limited to a fixed set of values, resource names, and mounts
of volumes a pod does not have. Shared by the manifest tests (wake, bundle)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: Fields the API server accepts only from a fixed set (k8s.io/kubernetes pkg/apis/core/validation
#: and pkg/apis/networking/validation), which the OpenAPI schemas type as bare strings; a key
#: is a field name or `<parent>.<field>`.
API_ENUMS: dict[str, frozenset[str]] = {
    "imagePullPolicy": frozenset({"Always", "IfNotPresent", "Never"}),
    "protocol": frozenset({"TCP", "UDP", "SCTP"}),
    "policyTypes": frozenset({"Ingress", "Egress"}),
    "seccompProfile.type": frozenset({"RuntimeDefault", "Localhost", "Unconfined"}),
}


def walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every value; a list's items keep the list's path."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from walk(value, path)


def enum_problems(manifest: dict[str, Any]) -> list[str]:
    """Every value of a field in API_ENUMS that is not in its set."""
    problems = []
    for path, value in walk(manifest):
        if not isinstance(value, str) or not path:
            continue
        for key in (path[-1], ".".join(path[-2:])):
            if key in API_ENUMS and value not in API_ENUMS[key]:
                problems.append(f"{manifest['metadata']['name']} {'.'.join(path)}={value}")
    return problems


def resource_name_problems(manifest: dict[str, Any]) -> list[str]:
    """A container's requests and limits name a standard resource or a domain-qualified
    extended one (k8s.io/kubernetes pkg/apis/core/validation, validateContainerResourceName);
    the schema types them as any map key."""
    standard = {"cpu", "memory", "ephemeral-storage"}
    return [
        f"{manifest['metadata']['name']} {'.'.join(path)}.{name}"
        for path, value in walk(manifest)
        if path[-2:] in (("resources", "requests"), ("resources", "limits"))
        for name in value
        if name not in standard and not name.startswith("hugepages-") and "/" not in name
    ]


def mount_problems(manifest: dict[str, Any]) -> list[str]:
    """Every volume a container or init container mounts is one of its pod's (the API server
    refuses the pod otherwise)."""
    pod = manifest.get("spec", {}).get("template", {}).get("spec")
    if pod is None:
        return []
    volumes = {v["name"] for v in pod.get("volumes", [])}
    return [
        f"{c['name']} mounts {m['name']}"
        for c in [*pod["containers"], *pod.get("initContainers", [])]
        for m in c.get("volumeMounts", [])
        if m["name"] not in volumes
    ]
