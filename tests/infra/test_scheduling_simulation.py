"""Every Neuron pod the templates emit fits the node each autoscaler imagines for an empty pool.

The nodes are built from the synthesized templates alone (autoscaler_sim explains how each
autoscaler builds them and cites its source); if a pod does not fit the Cluster Autoscaler's
template node, the autoscaler never scales the group up from zero and the pod stays Pending.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from autoscaler_sim import (
    GI,
    NEURON,
    STORAGE,
    TEMPLATE_TAG,
    Node,
    PodTemplate,
    installed_schedulers,
    karpenter_nodes,
    managed_nodegroup_nodes,
    manifests,
    pack,
    pod_templates,
    quantity,
    unschedulable_reasons,
)
from aws_cdk import App
from platform_synth import ADMIN, Synth, synth_profile
from trnspec.config.serving import load_profile
from trnspec.hardware.packing import ephemeral_storage_allocatable_gib, placement_for

from infra.app.composition import compose
from infra.settings import SettingsError, list_profiles, load_settings

PROFILES = tuple(list_profiles())


def _nodes(synth: Synth) -> list[Node]:
    return managed_nodegroup_nodes(synth.raw) + karpenter_nodes(synth.raw)


def _workloads(synth: Synth) -> tuple[list[PodTemplate], list[PodTemplate]]:
    """Pods to place (the serving stack's workloads, and any other Neuron pod) and DaemonSets."""
    serving = list(pod_templates(manifests(synth.serving_raw)))
    platform = list(pod_templates(manifests(synth.raw)))
    daemonsets = [p for p in serving + platform if p.owner.startswith("DaemonSet/")]
    # Serving pods for Trn2 nodes (the wake path's responder runs on the system nodes).
    pods = [p for p in serving if not p.owner.startswith("DaemonSet/") and p.selects_trn2()]
    pods += [p for p in platform if p.requests_neuron() and not p.owner.startswith("DaemonSet/")]
    return pods, daemonsets


def simulate(synth: Synth) -> list[str]:
    """Every (pod, pool view) that would not schedule, with the scheduler's reasons."""
    pods, daemonsets = _workloads(synth)
    schedulers = installed_schedulers(synth.raw)
    failures = []
    for pod in pods:
        for node in _nodes(synth):
            reasons = unschedulable_reasons(pod, node, daemonsets, schedulers)
            if reasons:
                failures.append(f"{pod.owner} on {node.name}: {'; '.join(reasons)}")
    return failures


@pytest.mark.parametrize("profile", PROFILES)
def test_every_neuron_pod_fits_an_empty_trn2_pool_of_every_autoscaler(
    platform_synth: Any, profile: str
) -> None:
    synth: Synth = platform_synth(profile)
    pods, _ = _workloads(synth)
    nodes = _nodes(synth)
    # Something to check: the serving Deployment and the precompile Job, on every pool, and the
    # weights Job (no Neuron device, on the same Trn2 node: the cluster's only other nodes are
    # the system group, which the workload never selects); in a calibration deployment also
    # the speculative arm (one chip), its weights Job and the calibration Job (no chip).
    name = synth.serving.spec.name
    calibrating = synth.serving.settings.calibration is not None
    chipless = sorted(p.owner.rsplit("-", 1)[0] for p in pods if not p.requests_neuron())
    expected = [f"Job/{name}-weights"]
    expected += [f"Job/{name}-calibration", f"Job/{name}-spec-weights"] if calibrating else []
    assert chipless == sorted(expected)
    servers = sorted(p.owner for p in pods if p.owner.startswith("Deployment/"))
    assert servers == [f"Deployment/{name}", *([f"Deployment/{name}-spec"] if calibrating else [])]
    # The precompile Job exactly where it fits beside a replica (not on a one-chip node).
    precompiles = any(p.owner.startswith(f"Job/{name}-precompile-") for p in pods)
    assert precompiles == (profile != "first-node")
    pools = {n.pool for n in nodes}
    assert len(pools) == len(synth.stack.settings.trn2_pools)
    assert simulate(synth) == []


@pytest.mark.parametrize("profile", ["default", "capacity-block"])
def test_without_the_ephemeral_storage_tag_the_empty_group_never_scales_up(
    platform_synth: Any, profile: str
) -> None:
    """The bug this guards against: the template node had no ephemeral storage at all."""
    synth: Synth = platform_synth(profile)
    key = f"{TEMPLATE_TAG}resources/{STORAGE}"
    raw = json.loads(json.dumps(synth.raw).replace(f'\\"Key\\":\\"{key}\\"', '\\"Key\\":\\"x\\"'))
    for r in raw["Resources"].values():
        if r["Type"] == "AWS::EKS::Nodegroup":
            r["Properties"].get("Tags", {}).pop(key, None)
    failures = simulate(dataclasses.replace(synth, raw=raw))
    assert failures, "the simulation must notice the missing tag"
    assert all("cluster-autoscaler template" in f for f in failures)
    # Every pod that stages models on the node (both arms' servers in a calibration deployment,
    # the speculative one with its drafter) fails for that reason alone, at its own request.
    pods, _ = _workloads(synth)
    staging = [p for p in pods if STORAGE in p.requests()]
    assert sorted(f.split(" on ")[0] for f in failures) == sorted(p.owner for p in staging)
    for pod in staging:
        gib = pod.requests()[STORAGE] / GI
        (failure,) = [f for f in failures if f.startswith(f"{pod.owner} on ")]
        reasons = failure.split(": ", 1)[1]
        assert reasons == f"Insufficient ephemeral-storage (requests {gib:.2f}Gi; node has none)"
    # The default plan's pod stages 40 GiB (Qwen3-4B without a drafter; trnspec.hardware.packing).
    (server,) = [p for p in staging if p.owner == f"Deployment/{synth.serving.spec.name}"]
    assert server.requests()[STORAGE] == 40 * GI


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overrides", "refusal", "failure", "failing"),
    [
        (
            {
                "trn2_pools.0.instance_type": "trn2.3xlarge",
                "serving.plan": "none",
                "serving.profile": "qwen3-4b-dflash-3xl",
                "serving.weights_volume_gib": "500",
            },
            "its nodes offer 392 GiB of ephemeral storage",
            "Insufficient ephemeral-storage (requests 500.00Gi, allocatable 392.",
            # the Deployment alone: the weights Job keeps its scratch on its own EBS volume (it
            # still fits), and a one-chip node gets no precompile Job
            1,
        ),
        (
            {"trn2_pools.0.lnc": "1"},
            r"select trnspec\.io/lnc=2 and no pool's nodes",
            "trnspec.io/lnc",
            # The weights Job selects the serving pods' labels: it shares their fate; so do the
            # calibration default's speculative arm, its weights Job and the calibration Job.
            6,
        ),
    ],
    ids=["scratch-above-instance-store", "pool-lnc-1"],
)
def test_what_synth_refuses_the_simulation_of_its_templates_refuses_too(
    tmp_path: Path, overrides: dict[str, str], refusal: str, failure: str, failing: int
) -> None:
    """On a trn2.3xlarge the kubelet's disk is the 470 GB instance store (392 GiB allocatable),
    too little for a 500 GiB scratch volume; a pool at LNC=1 lacks the label the pods select.
    Synth refuses both profiles (infra/platform/cluster/placement.py); built without that check,
    the autoscalers' template node and the booted node refuse the pods for the same reason."""
    with pytest.raises(SettingsError, match=refusal):
        compose(App(), load_settings("default", {**ADMIN, **overrides}))
    synth = synth_profile("default", tmp_path, overrides, check_placement=False)
    failures = simulate(synth)
    assert len(failures) == 2 * failing  # each pod on the template and on the booted node
    assert all(failure in f for f in failures), failures


@pytest.mark.parametrize("profile", PROFILES)
def test_autoscalers_never_imagine_more_than_the_booted_node_offers(
    platform_synth: Any, profile: str
) -> None:
    """Storage and Neuron figures the autoscalers plan with are what the kubelet and the device
    plugin will report (cpu and memory are the autoscalers' own business: the Cluster
    Autoscaler takes the instance's whole capacity as allocatable)."""
    nodes = _nodes(platform_synth(profile))
    booted = {(n.pool, n.instance_type): n for n in nodes if n.view == "booted node"}
    for node in nodes:
        if node.view == "booted node":
            continue
        real = booted[(node.pool, node.instance_type)]
        for name in (STORAGE, NEURON):
            assert node.allocatable[name] <= real.allocatable[name], (node.name, name)


def test_the_storage_tag_is_the_kubelets_share_of_the_root_volume() -> None:
    # 512 GiB - 10 % nodefs.available eviction (51.2) - 1 GiB kube-reserved = 459.8, floored.
    assert ephemeral_storage_allocatable_gib(512) == 459
    assert ephemeral_storage_allocatable_gib(200) == 179


def test_the_daemonset_load_counts_against_the_node() -> None:
    pod = _pod({"cpu": "1"})
    ds = _pod({"cpu": "500m"}, tolerations=[{"operator": "Exists"}])
    node = _node({"cpu": Decimal("1.2"), "pods": Decimal(110)})
    (reason,) = unschedulable_reasons(pod, node, [ds], {"default-scheduler"})
    assert reason.startswith("Insufficient cpu")


def test_the_simulation_reports_each_filter_that_rejects_a_pod() -> None:
    pod = _pod(
        {NEURON: "2", STORAGE: "10Gi"},
        schedulerName="neuron-scheduler",
        nodeSelector={"trnspec.io/lnc": "2"},
    )
    node = _node(
        {NEURON: Decimal(1), "pods": Decimal(110)},
        taints=(("aws.amazon.com/neuron", "true", "NoSchedule"),),
        labels={"trnspec.io/lnc": "1"},
    )
    reasons = unschedulable_reasons(pod, node, [], {"default-scheduler"})
    assert reasons == [
        "no scheduler named 'neuron-scheduler' is installed (['default-scheduler'])",
        "untolerated taint aws.amazon.com/neuron=true:NoSchedule",
        "node selector trnspec.io/lnc=2 (node has '1')",
        "Insufficient aws.amazon.com/neuron (requests 2, allocatable 1)",
        "Insufficient ephemeral-storage (requests 10.00Gi; node has none)",
    ]


def test_required_node_affinity_and_limits_are_checked() -> None:
    pod = _pod(
        {},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
    )
    node = Node(
        "p",
        "karpenter",
        "trn2.48xlarge",
        {"pods": Decimal(110)},
        {"zone": "b"},
        (),
        capacity={"cpu": Decimal(192)},
        limits={"cpu": Decimal(100)},
    )
    assert unschedulable_reasons(pod, node, [], {"default-scheduler"}) == [
        "required node affinity does not match",
        "NodePool limit cpu=100 is below one node",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("300Gi", Decimal(300 * GI)),
        ("500m", Decimal("0.5")),
        ("16", Decimal(16)),
        ("1.5Ki", Decimal(1536)),
        ("2G", Decimal(2 * 10**9)),
    ],
)
def test_quantities_parse_like_kubernetes(text: str, value: Decimal) -> None:
    assert quantity(text) == value


def _pod(requests: dict[str, str], **spec: Any) -> PodTemplate:
    return PodTemplate(
        "Pod/x", {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    )


def _node(
    allocatable: dict[str, Decimal],
    taints: tuple[tuple[str, str, str], ...] = (),
    labels: dict[str, str] | None = None,
) -> Node:
    return Node("p", "test", "trn2.48xlarge", allocatable, labels or {}, taints)


@pytest.mark.parametrize("replicas", [1, 16, 17, 40])
@pytest.mark.parametrize("profile", ["default", "karpenter"])
def test_pending_default_replicas_and_the_precompile_job_fill_trn2_nodes_chip_by_chip(
    platform_synth: Any, profile: str, replicas: int
) -> None:
    """N replicas of the shipped default (one chip each) plus its precompile Job, and in a
    calibration deployment the speculative arm's one replica (one chip), land on
    ceil((N + 1 + arm) / 16) trn2.48xlarge nodes in every view (autoscaler's imagined node,
    booted node): the Job and the arm run beside the replicas, not on a node of their own, and
    `predict` prices the same replicas per node (packing). The Jobs without a chip (weights,
    and the arm's weights and the calibration Job) fit beside them too."""
    synth: Synth = platform_synth(profile)
    pods, daemonsets = _workloads(synth)
    name = synth.serving.spec.name
    (server,) = [p for p in pods if p.owner == f"Deployment/{name}"]
    (job,) = [p for p in pods if p.owner.startswith(f"Job/{name}-precompile-")]
    arm = [p for p in pods if p.owner == f"Deployment/{name}-spec"]
    assert len(arm) == (synth.serving.settings.calibration is not None)
    chipless = [p for p in pods if not p.requests_neuron()]
    assert all(p.owner.startswith("Job/") for p in chipless) and chipless
    assert len(pods) == len(chipless) + 2 + len(arm)  # nothing else asks for a chip
    per_node = placement_for(load_profile((synth.stack.settings.serving or {})["profile"]))
    assert per_node is not None and per_node.packing.replicas == 16
    chips = replicas + 1 + len(arm)
    schedulers = installed_schedulers(synth.raw)
    for node in _nodes(synth):
        placed = pack(chipless + [job, *arm] + [server] * replicas, node, daemonsets, schedulers)
        assert len(placed) == -(-chips // per_node.packing.replicas), node.name
        first = placed[0]
        assert all(p.owner in first for p in [*chipless, job, *arm]), node.name
        assert len(first) == len(chipless) + min(chips, 16), node.name


def test_without_the_instance_store_a_root_volume_holds_fewer_default_replicas(
    platform_synth: Any,
) -> None:
    """Without the nodeadm RAID0 part the kubelet's disk is the root volume, sized for the OS
    alone (100 GiB): 89 GiB holds 2 replicas of the default's 40 GiB, not 16 (the regression
    this guards against: the RAID0 part must stay while the root volume is small)."""
    synth: Synth = platform_synth("default")
    raw = json.loads(json.dumps(synth.raw).replace("strategy: RAID0", "strategy: none"))
    pods, daemonsets = _workloads(synth)
    (server,) = [p for p in pods if p.owner == f"Deployment/{synth.serving.spec.name}"]
    (booted,) = [n for n in managed_nodegroup_nodes(raw) if n.view == "booted node"]
    placed = pack([server] * 16, booted, daemonsets, installed_schedulers(synth.raw))
    assert server.requests()[STORAGE] == 40 * GI
    assert [len(n) for n in placed] == [2] * 8


def test_the_first_node_profile_bills_one_node_on_its_first_deploy(platform_synth: Any) -> None:
    """On a one-chip trn2.3xlarge the precompile Job and the replica cannot share the node: a
    Job there held the only chip and the replica started a second node (issue 48, finding 7).
    The templates now emit no precompile Job for it, and every pod of the first deploy (weights
    Job, replica) lands on one node in every autoscaler's view."""
    synth: Synth = platform_synth("first-node")
    pods, daemonsets = _workloads(synth)
    name = synth.serving.spec.name
    assert not [p for p in pods if p.owner.startswith(f"Job/{name}-precompile-")]
    assert [p.owner for p in pods if p.requests_neuron()] == [f"Deployment/{name}"]
    schedulers = installed_schedulers(synth.raw)
    for node in _nodes(synth):
        assert node.instance_type == "trn2.3xlarge"
        placed = pack(pods, node, daemonsets, schedulers)
        assert len(placed) == 1, node.name
