"""The node an autoscaler imagines for an empty Trn2 pool, and whether a pod fits it.

Everything is read from the synthesized CloudFormation templates, the way the real components read
the deployed resources:

- Cluster Autoscaler, AWS provider (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws
  aws_manager.go `buildNodeFromTemplate`): capacity is the instance type's vCPUs and memory plus
  110 pods, then every `k8s.io/cluster-autoscaler/node-template/resources/<name>` tag of the ASG,
  then the same tags of the managed node group (read through eks:DescribeNodegroup, they win);
  allocatable is that capacity as is. Labels: generic ones, ASG `node-template/label/*` and
  `eks:*` tags, then the node group's labels. Taints: ASG `node-template/taint/*` tags plus the
  node group's taints.
- Karpenter (aws/karpenter-provider-aws pkg/providers/instancetype/types.go): capacity from the
  instance type (memory less the 7.5 % VM overhead, ephemeral storage = the EC2NodeClass root
  volume, or the instance store's total size with `instanceStorePolicy: RAID0`, Neuron devices
  and cores), allocatable less kube-reserved (cpu steps, 11 MiB per pod +
  255 MiB, 1 GiB storage) and the eviction threshold (100 MiB, 10 % of the node filesystem);
  labels from the NodePool template and its single-valued requirements; its taints and limits.
- The node once booted (EKS AL2023 nodeadm defaults, awslabs/amazon-eks-ami
  nodeadm/internal/kubelet/config.go, which match Karpenter's model above; with a NodeConfig
  `localStorage: {strategy: RAID0}` in the user data the kubelet's filesystem is the instance
  store, whose size comes from `EC2_TYPES`; the Neuron device
  plugin advertises chips and logical cores, so the LNC written by the user data counts).

A pod fits when the scheduler's filters would pass: every requested resource exists and
suffices after the DaemonSet pods the templates put on the node, taints are tolerated, the node
selector and required node affinity match, and a scheduler of its `schedulerName` is installed.

Not visible in the templates, so not counted: DaemonSets that Helm charts render (Neuron device
plugin and node problem detector, node-exporter) and EKS add-ons (VPC CNI, kube-proxy, Pod
Identity agent). Their requests are a fraction of a CPU and a few hundred MiB.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any

from platform_synth import cfn_text as _cfn_text

Resources = dict[str, Decimal]
Manifest = dict[str, Any]

GI = 2**30
MI = 2**20
NEURON = "aws.amazon.com/neuron"
NEURON_CORE = "aws.amazon.com/neuroncore"
STORAGE = "ephemeral-storage"
TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template/"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: The scheduler every cluster runs.
DEFAULT_SCHEDULER = "default-scheduler"
#: Pods the Cluster Autoscaler gives a template node ("TODO: get a real value"); the real
#: ENI-based limit of these types is higher, so this is the lower bound we check against.
TEMPLATE_PODS = 110
#: Karpenter's default VMMemoryOverheadPercent.
VM_MEMORY_OVERHEAD = Decimal("0.075")
#: The root device of the EKS AL2023 AMI (Karpenter's EphemeralBlockDevice for AL2023).
AL2023_ROOT_DEVICE = "/dev/xvda"
_LNC = re.compile(r"NEURON_LOGICAL_NC_CONFIG=(\d)")
#: nodeadm's NodeConfig part that RAID0s the instance store under the kubelet.
_RAID0 = re.compile(r"localStorage:\s*\n\s*strategy:\s*RAID0")


@dataclass(frozen=True)
class Ec2Type:
    """What EC2 reports for an instance type (DescribeInstanceTypes)."""

    vcpus: int
    memory_gib: int
    neuron_devices: int
    neuron_cores_per_device: int
    #: Instance store, total GB (DescribeInstanceTypes InstanceStorageInfo.TotalSizeInGB).
    instance_store_gb: int = 0


#: The instance types the profiles use. trn2.48xlarge / trn2u.48xlarge: 16 Trainium2 chips of 8
#: NeuronCores, 192 vCPUs, 2,048 GiB (Neuron docs, "Amazon EC2 Trn2 Architecture",
#: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn2-arch.html);
#: trn2.3xlarge: 1 chip, 12 vCPUs, 128 GiB (https://aws.amazon.com/ec2/instance-types/trn2/).
EC2_TYPES: dict[str, Ec2Type] = {
    "trn2.48xlarge": Ec2Type(
        vcpus=192,
        memory_gib=2048,
        neuron_devices=16,
        neuron_cores_per_device=8,
        instance_store_gb=4 * 1900,
    ),
    "trn2u.48xlarge": Ec2Type(
        vcpus=192, memory_gib=2048, neuron_devices=16, neuron_cores_per_device=8
    ),
    # One 470 GB NVMe disk (DescribeInstanceTypes InstanceStorageInfo, as bundled in moto 5.2.6).
    "trn2.3xlarge": Ec2Type(
        vcpus=12, memory_gib=128, neuron_devices=1, neuron_cores_per_device=8, instance_store_gb=470
    ),
}

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|m|k|M|G|T|P)?$")


def quantity(value: str | int | float) -> Decimal:
    """A Kubernetes resource quantity ("300Gi", "500m", "16") as a number of base units."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return Decimal(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def show(resource: str, amount: Decimal) -> str:
    """Human form of an amount, as the scheduler's messages would read."""
    if resource in ("memory", STORAGE):
        return f"{(amount / GI).quantize(Decimal('0.01'))}Gi"
    return f"{amount.normalize():f}"


@dataclass(frozen=True)
class Node:
    """One imagined node: what the scheduler simulation sees."""

    pool: str
    view: str
    instance_type: str
    allocatable: Resources
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]
    capacity: Resources = field(default_factory=dict)
    limits: Resources = field(default_factory=dict)
    """Karpenter NodePool limits: a node whose capacity exceeds them is never launched."""

    @property
    def name(self) -> str:
        return f"{self.pool} ({self.view}, {self.instance_type})"


@dataclass(frozen=True)
class PodTemplate:
    """A pod template of a workload object."""

    owner: str
    spec: Manifest

    def requests(self) -> Resources:
        """Effective requests: containers summed, init containers' maximum, limits defaulting
        requests (as the API server does for a resource with a limit and no request)."""
        total: Resources = {}
        for c in self.spec.get("containers", []):
            for name, amount in _container_requests(c).items():
                total[name] = total.get(name, Decimal(0)) + amount
        for c in self.spec.get("initContainers", []):
            for name, amount in _container_requests(c).items():
                total[name] = max(total.get(name, Decimal(0)), amount)
        return total

    def requests_neuron(self) -> bool:
        return any(name.startswith(NEURON) for name in self.requests())

    def selects_trn2(self) -> bool:
        """Whether the pod asks for a Trn2 node (a Neuron device, or Trn2's taint tolerated):
        the others run on the system nodes."""
        tolerated = {t.get("key") for t in self.spec.get("tolerations", [])}
        return self.requests_neuron() or NEURON in tolerated


def _container_requests(container: Manifest) -> Resources:
    res = container.get("resources", {})
    merged = {**res.get("limits", {}), **res.get("requests", {})}
    return {name: quantity(v) for name, v in merged.items()}


# --- reading the templates -------------------------------------------------------------------


def cfn_text(value: Any) -> str:
    """platform_synth.cfn_text, plus the string form of Fn::Sub (image URIs of region-pinned
    stacks); references stay ${...} placeholders either way."""
    if isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
        return value["Fn::Sub"]
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(cfn_text(p) for p in parts)
    return _cfn_text(value)


def manifests(raw: dict[str, Any]) -> list[Manifest]:
    """Every object a template applies through KubernetesManifest (tokens as ${...})."""
    out: list[Manifest] = []
    for r in raw["Resources"].values():
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource":
            out.extend(json.loads(cfn_text(r["Properties"]["Manifest"])))
    return out


def helm_values(raw: dict[str, Any], chart: str) -> list[dict[str, Any]]:
    """Values of every release of `chart` in a template."""
    out = []
    for r in raw["Resources"].values():
        props = r["Properties"]
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart" and props.get("Chart") == chart:
            values = props.get("Values", "{}")
            out.append(json.loads(cfn_text(values)) if values else {})
    return out


def installed_schedulers(platform_raw: dict[str, Any]) -> set[str]:
    """default-scheduler plus the Neuron chart's own kube-scheduler, when the chart enables it
    (its name is `scheduler.customScheduler.fullnameOverride`)."""
    names = {DEFAULT_SCHEDULER}
    for values in helm_values(platform_raw, "neuron-helm-chart"):
        scheduler = values.get("scheduler", {})
        name = scheduler.get("customScheduler", {}).get("fullnameOverride")
        if scheduler.get("enabled") and name:
            names.add(name)
    return names


def pod_templates(objects: Iterable[Manifest]) -> Iterator[PodTemplate]:
    """Pod templates of workload objects (CronJobs through their job template)."""
    for obj in objects:
        kind = obj.get("kind")
        owner = f"{kind}/{obj.get('metadata', {}).get('name')}"
        if kind in ("Deployment", "StatefulSet", "ReplicaSet", "Job", "DaemonSet"):
            yield PodTemplate(owner, obj["spec"]["template"]["spec"])
        elif kind == "CronJob":
            yield PodTemplate(owner, obj["spec"]["jobTemplate"]["spec"]["template"]["spec"])


def _instance_resources(name: str) -> Ec2Type:
    try:
        return EC2_TYPES[name]
    except KeyError:
        raise KeyError(f"add {name} to EC2_TYPES (from the EC2 instance-type docs)") from None


def _generic_labels(instance_type: str, pool: str) -> dict[str, str]:
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        INSTANCE_TYPE_LABEL: instance_type,
        "kubernetes.io/hostname": f"template-{pool}",
    }


def _lnc(user_data: str) -> int | None:
    match = _LNC.search(user_data)
    return int(match.group(1)) if match else None


def _kube_reserved_cpu_millis(vcpus: int) -> Decimal:
    """6 % of the first core, 1 % of the second, 0.5 % of cores 3-4, 0.25 % above."""
    millis = Decimal(vcpus * 1000)
    total = Decimal(0)
    for start, end, pct in (
        (0, 1000, "0.06"),
        (1000, 2000, "0.01"),
        (2000, 4000, "0.005"),
        (4000, 1 << 31, "0.0025"),
    ):
        if millis > start:
            total += (min(millis, Decimal(end)) - start) * Decimal(pct)
    return total


def kubelet_allocatable(capacity: Resources, pods: int) -> Resources:
    """Capacity less kube-reserved and the hard eviction thresholds (EKS AL2023 defaults)."""
    out = dict(capacity)
    out["cpu"] = capacity["cpu"] - _kube_reserved_cpu_millis(int(capacity["cpu"])) / 1000
    out["memory"] = capacity["memory"] - (11 * pods + 255) * MI - 100 * MI
    storage = capacity.get(STORAGE, Decimal(0))
    eviction = (storage / 10).to_integral_value(ROUND_CEILING)
    out[STORAGE] = max(Decimal(0), storage - GI - eviction)
    return out


def _booted_capacity(
    ec2: Ec2Type, root_gib: Decimal, lnc: int | None, instance_store: bool = False
) -> Resources:
    """The node's capacity; its ephemeral storage is the instance store when nodeadm (or
    Karpenter's instanceStorePolicy) RAID0s it under the kubelet, else the root volume."""
    storage = (
        Decimal(ec2.instance_store_gb * 10**9)
        if instance_store and ec2.instance_store_gb
        else root_gib * GI
    )
    memory = Decimal(ec2.memory_gib * 1024) * (1 - VM_MEMORY_OVERHEAD)
    cores = ec2.neuron_devices * ec2.neuron_cores_per_device
    return {
        "cpu": Decimal(ec2.vcpus),
        "memory": memory.to_integral_value(ROUND_CEILING) * MI,
        "pods": Decimal(TEMPLATE_PODS),
        STORAGE: storage,
        NEURON: Decimal(ec2.neuron_devices),
        # The device plugin counts logical cores; without a readable LNC file the runtime
        # keeps the Trn2 default of 2.
        NEURON_CORE: Decimal(cores // (lnc or 2)),
    }


# --- Cluster Autoscaler over managed node groups ---------------------------------------------


def _asg_tags_by_nodegroup(raw: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Tags the platform's custom resources put on each node group's ASG (createOrUpdateTags),
    keyed by node group name, found through the describeNodegroup lookup they reference."""
    resources = raw["Resources"]
    lookups: dict[str, str] = {}
    for logical_id, r in resources.items():
        if r["Type"] != "Custom::AWS":
            continue
        call = json.loads(cfn_text(r["Properties"]["Create"]))
        if call["action"] == "describeNodegroup":
            lookups[logical_id] = call["parameters"]["nodegroupName"]
    tags: dict[str, dict[str, str]] = {}
    for r in resources.values():
        if r["Type"] != "Custom::AWS":
            continue
        call = json.loads(cfn_text(r["Properties"]["Create"]))
        if call["action"] != "createOrUpdateTags":
            continue
        for tag in call["parameters"]["Tags"]:
            lookup = tag["ResourceId"].removeprefix("${").split(".")[0]
            tags.setdefault(lookups[lookup], {})[tag["Key"]] = tag["Value"]
    return tags


def _resources_from_tags(tags: dict[str, str]) -> Resources:
    prefix = TEMPLATE_TAG + "resources/"
    return {k.removeprefix(prefix): quantity(v) for k, v in tags.items() if k.startswith(prefix)}


def _taint(effect: str) -> str:
    """EKS spells taint effects NO_SCHEDULE; Kubernetes NoSchedule."""
    return "".join(p.capitalize() for p in effect.split("_")) if "_" in effect else effect


def managed_nodegroup_nodes(raw: dict[str, Any]) -> list[Node]:
    """For every Trn2 managed node group: the Cluster Autoscaler's template node and the node
    that boots from the launch template."""
    resources = raw["Resources"]
    asg_tags = _asg_tags_by_nodegroup(raw)
    nodes: list[Node] = []
    for r in resources.values():
        if r["Type"] != "AWS::EKS::Nodegroup":
            continue
        props = r["Properties"]
        lt_data: dict[str, Any] = {}
        if "LaunchTemplate" in props:
            lt_data = resources[props["LaunchTemplate"]["Id"]["Ref"]]["Properties"][
                "LaunchTemplateData"
            ]
        instance_type = (props.get("InstanceTypes") or [lt_data.get("InstanceType")])[0]
        if instance_type not in EC2_TYPES:
            continue  # the system node group
        name = props["NodegroupName"]
        ec2 = _instance_resources(instance_type)
        mng_labels = dict(props.get("Labels", {}))
        mng_taints = tuple(
            (t["Key"], t.get("Value", ""), _taint(t["Effect"])) for t in props.get("Taints", [])
        )
        # EKS tags the ASG with eks:cluster-name and eks:nodegroup-name; the autoscaler reads
        # them as labels and recognises a managed node group by them.
        asg = {"eks:cluster-name": "cluster", "eks:nodegroup-name": name, **asg_tags.get(name, {})}

        capacity: Resources = {
            "cpu": Decimal(ec2.vcpus),
            "memory": Decimal(ec2.memory_gib * 1024) * MI,
            "pods": Decimal(TEMPLATE_PODS),
            "nvidia.com/gpu": Decimal(0),
        }
        capacity.update(_resources_from_tags(asg))
        labels = _generic_labels(instance_type, name)
        for key, value in asg.items():
            if key.startswith(TEMPLATE_TAG + "label/"):
                labels[key.removeprefix(TEMPLATE_TAG + "label/")] = value
            elif key.startswith("eks:"):
                labels[key.removeprefix("eks:")] = value
        taints = tuple(
            (k.removeprefix(TEMPLATE_TAG + "taint/"), *v.split(":", 1))
            for k, v in asg.items()
            if k.startswith(TEMPLATE_TAG + "taint/")
        )
        labels.update(mng_labels)
        taints += mng_taints
        capacity.update(_resources_from_tags(props.get("Tags", {})))
        nodes.append(
            Node(name, "cluster-autoscaler template", instance_type, dict(capacity), labels, taints)
        )

        root = _root_volume_gib(lt_data.get("BlockDeviceMappings", []), "DeviceName", "Ebs")
        user_data = lt_data.get("UserData", {}).get("Fn::Base64", "")
        booted = _booted_capacity(ec2, root, _lnc(user_data), bool(_RAID0.search(user_data)))
        nodes.append(
            Node(
                name,
                "booted node",
                instance_type,
                kubelet_allocatable(booted, TEMPLATE_PODS),
                {**_generic_labels(instance_type, name), **mng_labels},
                mng_taints,
                capacity=booted,
            )
        )
    return nodes


def _root_volume_gib(mappings: list[dict[str, Any]], device_key: str, ebs_key: str) -> Decimal:
    """Size of the root volume in a block-device-mapping list (0 when none is mapped: the AMI's
    default would apply, which the template does not show)."""
    for m in mappings:
        if m.get("rootVolume") or m.get(device_key) == AL2023_ROOT_DEVICE:
            size = m[ebs_key].get("VolumeSize", m[ebs_key].get("volumeSize"))
            return quantity(size) / GI if isinstance(size, str) else Decimal(size)
    return Decimal(0)


# --- Karpenter -------------------------------------------------------------------------------


def karpenter_nodes(raw: dict[str, Any]) -> list[Node]:
    """For every NodePool and instance type it allows: Karpenter's node and the booted node."""
    objects = manifests(raw)
    classes = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "EC2NodeClass"}
    nodes: list[Node] = []
    for pool in (o for o in objects if o["kind"] == "NodePool"):
        name = pool["metadata"]["name"]
        template = pool["spec"]["template"]
        spec = template["spec"]
        node_class = classes[spec["nodeClassRef"]["name"]]
        requirements = {r["key"]: r for r in spec.get("requirements", [])}
        types = requirements.get(INSTANCE_TYPE_LABEL, {}).get("values", list(EC2_TYPES))
        taints = tuple((t["key"], t.get("value", ""), t["effect"]) for t in spec.get("taints", []))
        limits = {k: quantity(v) for k, v in pool["spec"].get("limits", {}).items()}
        root = _root_volume_gib(node_class.get("blockDeviceMappings", []), "deviceName", "ebs")
        raid0 = node_class.get("instanceStorePolicy") == "RAID0"
        for instance_type in types:
            ec2 = _instance_resources(instance_type)
            labels = _generic_labels(instance_type, name)
            labels.update(template.get("metadata", {}).get("labels", {}))
            for key, req in requirements.items():
                if req["operator"] == "In" and len(req["values"]) == 1:
                    labels[key] = req["values"][0]
            capacity = _booted_capacity(ec2, root, None, raid0)
            # Karpenter counts physical cores (DescribeInstanceTypes NeuronInfo), not logical.
            capacity[NEURON_CORE] = Decimal(ec2.neuron_devices * ec2.neuron_cores_per_device)
            nodes.append(
                Node(
                    name,
                    "karpenter",
                    instance_type,
                    kubelet_allocatable(capacity, TEMPLATE_PODS),
                    labels,
                    taints,
                    capacity=capacity,
                    limits=limits,
                )
            )
            booted = _booted_capacity(ec2, root, _lnc(node_class.get("userData", "")), raid0)
            nodes.append(
                Node(
                    name,
                    "booted node",
                    instance_type,
                    kubelet_allocatable(booted, TEMPLATE_PODS),
                    labels,
                    taints,
                    capacity=booted,
                )
            )
    return nodes


# --- the scheduler's filters -----------------------------------------------------------------


def tolerates(spec: Manifest, taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    if effect == "PreferNoSchedule":
        return True
    for t in spec.get("tolerations", []):
        if t.get("effect") and t["effect"] != effect:
            continue
        op = t.get("operator", "Equal")
        if not t.get("key") and op == "Exists":
            return True
        if t.get("key") == key and (op == "Exists" or t.get("value", "") == value):
            return True
    return False


def _expression_matches(labels: dict[str, str], expr: Manifest) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present:
            return False
        have, want = int(labels[key]), int(values[0])
        return have > want if op == "Gt" else have < want
    raise ValueError(f"unknown node selector operator {op}")


def selects(spec: Manifest, labels: dict[str, str]) -> list[str]:
    """Why the pod's node selector or required node affinity rejects these labels."""
    reasons = [
        f"node selector {k}={v} (node has {labels.get(k)!r})"
        for k, v in spec.get("nodeSelector", {}).items()
        if labels.get(k) != v
    ]
    affinity = spec.get("affinity", {}).get("nodeAffinity", {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        terms = required.get("nodeSelectorTerms", [])
        if not any(
            all(_expression_matches(labels, e) for e in term.get("matchExpressions", []))
            for term in terms
        ):
            reasons.append("required node affinity does not match")
    return reasons


def daemonset_load(node: Node, daemonsets: Iterable[PodTemplate]) -> tuple[Resources, int]:
    """Requests and pod count of the DaemonSet pods that would run on the node."""
    used: Resources = {}
    count = 0
    for ds in daemonsets:
        if all(tolerates(ds.spec, t) for t in node.taints if t[2] != "PreferNoSchedule") and not (
            selects(ds.spec, node.labels)
        ):
            count += 1
            for name, amount in ds.requests().items():
                used[name] = used.get(name, Decimal(0)) + amount
    return used, count


def unschedulable_reasons(
    pod: PodTemplate, node: Node, daemonsets: Iterable[PodTemplate], schedulers: set[str]
) -> list[str]:
    """Why the scheduler would not place `pod` on `node` (empty: it fits)."""
    reasons: list[str] = []
    scheduler = pod.spec.get("schedulerName", DEFAULT_SCHEDULER)
    if scheduler not in schedulers:
        reasons.append(f"no scheduler named {scheduler!r} is installed ({sorted(schedulers)})")
    for taint in node.taints:
        if not tolerates(pod.spec, taint):
            reasons.append(f"untolerated taint {taint[0]}={taint[1]}:{taint[2]}")
    reasons += selects(pod.spec, node.labels)
    used, ds_pods = daemonset_load(node, daemonsets)
    for name, amount in sorted(pod.requests().items()):
        if amount == 0:
            continue
        if name not in node.allocatable:
            reasons.append(f"Insufficient {name} (requests {show(name, amount)}; node has none)")
            continue
        free = node.allocatable[name] - used.get(name, Decimal(0))
        if amount > free:
            reasons.append(
                f"Insufficient {name} (requests {show(name, amount)}, "
                f"allocatable {show(name, node.allocatable[name])}"
                f"{f', DaemonSets {show(name, used[name])}' if name in used else ''})"
            )
    if ds_pods + 1 > node.allocatable.get("pods", Decimal(0)):
        reasons.append("Too many pods")
    for name, limit in node.limits.items():
        if node.capacity.get(name, Decimal(0)) > limit:
            reasons.append(f"NodePool limit {name}={show(name, limit)} is below one node")
    return reasons


def pack(
    pods: Iterable[PodTemplate], node: Node, daemonsets: Iterable[PodTemplate], schedulers: set[str]
) -> list[list[str]]:
    """Place pending pods one by one on nodes like `node` (the autoscaler adds a node when none
    has room, the scheduler fills existing nodes first): the owners on each node."""
    ds = list(daemonsets)
    used_ds, ds_pods = daemonset_load(node, ds)
    nodes: list[tuple[Resources, list[str]]] = []
    for pod in pods:
        if unschedulable_reasons(pod, node, ds, schedulers):
            raise ValueError(f"{pod.owner} fits no node like {node.name}")
        for free, owners in nodes:
            if _fits(pod, free) and len(owners) + ds_pods + 1 <= node.allocatable["pods"]:
                _take(pod, free)
                owners.append(pod.owner)
                break
        else:
            free = {k: v - used_ds.get(k, Decimal(0)) for k, v in node.allocatable.items()}
            _take(pod, free)
            nodes.append((free, [pod.owner]))
    return [owners for _, owners in nodes]


def _fits(pod: PodTemplate, free: Resources) -> bool:
    return all(amount <= free.get(name, Decimal(0)) for name, amount in pod.requests().items())


def _take(pod: PodTemplate, free: Resources) -> None:
    for name, amount in pod.requests().items():
        free[name] = free.get(name, Decimal(0)) - amount
