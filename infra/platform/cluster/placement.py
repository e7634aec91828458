"""Whether the serving pods can ever be placed on a node one of the Trn2 pools makes.

Settings can pass every per-section check and still leave the pods Pending forever: the engine
config asks for an instance type or LNC that no pool provides (the pods' nodeSelector matches no
node), a pod asks for more ephemeral storage than a pool's node offers, or for more Neuron devices
than the instance has. Neither autoscaler launches a node for such a pod, and nothing fails at
deploy time. This module reads the pods as the serving stack applies them (the Deployment and the
precompile Job from infra.serving.manifests's builders: nodeSelector and requests) and the nodes as
the platform makes them (infra.platform.cluster.neuron_node: labels, device resources, the
kubelet's ephemeral-storage allocatable), so it checks the real manifests, not a second model of
them. Pure: no CDK.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from trnspec.boundary.problems import Problem
from trnspec.hardware.packing import (
    Packing,
    Resources,
    ephemeral_storage_allocatable_gib,
    node_allocatable,
    replicas_per_node,
)

from infra.contracts import INSTANCE_TYPE_LABEL, LNC_NODE_LABEL, NEURON_DEVICE_RESOURCE
from infra.platform.cluster.neuron_node import (
    node_ephemeral_storage_gib,
    node_labels,
    node_resources,
    uses_instance_store,
)
from infra.platform.cluster.root_volume import root_volume
from infra.settings import Trn2PoolSettings

#: Where each label the serving pods select on comes from, for the fix in a message.
_LABEL_SOURCES = {
    INSTANCE_TYPE_LABEL: ("instance_type", "hardware.instance_type"),
    LNC_NODE_LABEL: ("lnc", "hardware.lnc"),
}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def gib(quantity: str | int) -> float:
    """A Kubernetes storage quantity (`400Gi`, `500G`, `1073741824`) in GiB."""
    text = str(quantity)
    for suffix, factor in (*_BINARY.items(), *_DECIMAL.items()):
        if text.endswith(suffix):
            return float(text.removesuffix(suffix)) * factor / 2**30
    return float(text) / 2**30


def neuron_pods(manifests: Iterable[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(kind/name, pod spec) of every workload object whose pods ask for Neuron devices."""
    out = []
    for obj in manifests:
        pod = obj.get("spec", {}).get("template", {}).get("spec")
        if pod and any(_requests(pod, NEURON_DEVICE_RESOURCE)):
            out.append((f"{obj['kind']}/{obj['metadata']['name']}", pod))
    return out


def _requests(pod: dict[str, Any], resource: str) -> list[str]:
    return [
        c["resources"]["requests"][resource]
        for c in pod.get("containers", []) + pod.get("initContainers", [])
        if resource in c.get("resources", {}).get("requests", {})
    ]


def pod_request(pod: dict[str, Any], resource: str) -> float:
    """What the scheduler reserves for `resource` (memory and storage in GiB, cpu in cores): the
    sum over the containers, or the largest init container's request if larger (they run one at
    a time, before the containers)."""

    def amount(c: dict[str, Any]) -> float:
        value = c.get("resources", {}).get("requests", {}).get(resource, 0)
        if resource in ("ephemeral-storage", "memory"):
            return gib(value)
        text = str(value)
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)

    containers = sum(amount(c) for c in pod.get("containers", []))
    return max([containers, *(amount(c) for c in pod.get("initContainers", []))])


def pod_resources(pod: dict[str, Any]) -> Resources:
    """A pod spec's effective requests in packing's terms (memory and storage in GiB)."""
    return Resources(
        chips=int(pod_request(pod, NEURON_DEVICE_RESOURCE)),
        cpu=pod_request(pod, "cpu"),
        memory_gib=pod_request(pod, "memory"),
        ephemeral_gib=pod_request(pod, "ephemeral-storage"),
    )


def pool_packing(pool: Trn2PoolSettings, pod: dict[str, Any]) -> Packing:
    """Replicas of `pod` one node of the pool holds (trnspec packing, which `predict` reads)."""
    node = node_allocatable(pool.instance_type, root_volume(pool).size_gib)
    return replicas_per_node(pod_resources(pod), node)


def min_root_volume_gib(ephemeral_gib: float) -> int:
    """Smallest root volume whose node offers `ephemeral_gib` of ephemeral storage."""
    size = math.ceil(ephemeral_gib)
    while ephemeral_storage_allocatable_gib(size) < ephemeral_gib:
        size += 1
    return size


#: Where the engine overrides of the serving pods live; a calibration deployment's speculative
#: arm has its own, which must change with the main ones (both arms run on the same hardware).
ENGINE_OVERRIDES = ("serving.overrides",)
CALIBRATION_ENGINE_OVERRIDES = (*ENGINE_OVERRIDES, "serving.calibration.speculative.overrides")


def placement_problems(
    pools: tuple[Trn2PoolSettings, ...],
    manifests: Iterable[dict[str, Any]],
    engine_overrides: tuple[str, ...] = ENGINE_OVERRIDES,
) -> list[Problem]:
    """One problem per reason a serving pod fits no pool's node, naming the pool field, its
    value and the fix (or the engine setting to change instead, in every one of
    `engine_overrides`)."""
    problems: list[Problem] = []
    # A selector no pool's labels satisfy is one reason whatever the pods ask for: one line.
    unmatched: dict[str, tuple[list[str], dict[str, str]]] = {}
    for names, pod in _pods_by_ask(manifests):
        selector: dict[str, str] = pod.get("nodeSelector", {})
        matching = [
            (i, p)
            for i, p in enumerate(pools)
            if all(node_labels(p).get(k) == v for k, v in selector.items())
        ]
        if not matching:
            unmatched.setdefault(repr(sorted(selector.items())), ([], selector))[0].extend(names)
            continue
        if any(pool_packing(p, pod).replicas >= 1 for _, p in matching):
            continue
        owner = " and ".join(names)
        for i, p in matching:
            problems.extend(_pool_problems(i, p, pod, owner))
    for names, selector in unmatched.values():
        problems.extend(_selector_problems(" and ".join(names), selector, pools, engine_overrides))
    return problems


def _pods_by_ask(manifests: Iterable[dict[str, Any]]) -> list[tuple[list[str], dict[str, Any]]]:
    """The Neuron pods grouped by what they ask for (node selector, devices, ephemeral
    storage): pods that ask for the same thing fail for the same reason, so one line names
    them all. Each group: its kind/names and one of its pod specs."""
    groups: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for name, pod in neuron_pods(manifests):
        ask = (
            sorted(pod.get("nodeSelector", {}).items()),
            pod_request(pod, NEURON_DEVICE_RESOURCE),
            pod_request(pod, "ephemeral-storage"),
        )
        groups.setdefault(repr(ask), ([], pod))[0].append(name)
    return list(groups.values())


def _pool_problems(
    i: int, pool: Trn2PoolSettings, pod: dict[str, Any], owner: str
) -> list[Problem]:
    """Why pool `i`, whose labels the pod selects, cannot hold one of `owner`'s pods: too few
    devices, too little ephemeral storage (instance store or root volume), CPU or memory."""
    problems: list[Problem] = []
    devices = pod_request(pod, NEURON_DEVICE_RESOURCE)
    storage = pod_request(pod, "ephemeral-storage")
    chips = node_resources(pool)[NEURON_DEVICE_RESOURCE]
    if devices > chips:
        problems.append(
            Problem(
                f"trn2_pools.{i}.instance_type",
                pool.instance_type,
                f"its nodes have {chips} {NEURON_DEVICE_RESOURCE} devices and {owner} "
                f"ask for {devices:g} (tensor_parallel_size at hardware.lnc): use an "
                "instance type with more chips, or a smaller tensor_parallel_size in "
                "serving.overrides",
            )
        )
    allocatable = node_ephemeral_storage_gib(pool)
    if storage > allocatable and uses_instance_store(pool):
        problems.append(
            Problem(
                f"trn2_pools.{i}.instance_type",
                pool.instance_type,
                f"its nodes offer {allocatable} GiB of ephemeral storage (instance store) "
                f"and {owner} ask for {storage:g} GiB: lower serving.weights_volume_gib, "
                "or use weights_storage ebs",
            )
        )
    elif storage > allocatable:
        problems.append(
            Problem(
                f"trn2_pools.{i}.root_volume_gib",
                root_volume(pool).size_gib,
                f"its nodes offer {allocatable} GiB of ephemeral storage and {owner} "
                f"ask for {storage:g} GiB (serving.weights_volume_gib with "
                f"weights_storage node-local): set root_volume_gib to at least "
                f"{min_root_volume_gib(storage)}, or lower serving.weights_volume_gib",
            )
        )
    packing = pool_packing(pool, pod)
    if packing.replicas < 1 and packing.limit in ("cpu", "memory"):
        problems.append(
            Problem(
                f"trn2_pools.{i}.instance_type",
                pool.instance_type,
                f"{owner} do not fit its nodes: {packing.reason}",
            )
        )
    return problems


def _selector_problems(
    owner: str,
    selector: dict[str, str],
    pools: tuple[Trn2PoolSettings, ...],
    engine_overrides: tuple[str, ...],
) -> list[Problem]:
    """Why no pool's labels satisfy the pods' nodeSelector: one line per pool and label."""
    problems = []
    where = " and ".join(engine_overrides)
    for i, pool in enumerate(pools):
        labels = node_labels(pool)
        for key, wanted in selector.items():
            if labels.get(key) == wanted:
                continue
            field, engine = _LABEL_SOURCES.get(key, (f"labels.{key}", None))
            instead = f", or {engine}={labels.get(key)} in {where}" if engine else ""
            problems.append(
                Problem(
                    f"trn2_pools.{i}.{field}",
                    labels.get(key),
                    f"{owner} select {key}={wanted} and no pool's nodes carry it, so they stay "
                    f"Pending: set trn2_pools.{i}.{field}={wanted}{instead}",
                )
            )
    return problems
