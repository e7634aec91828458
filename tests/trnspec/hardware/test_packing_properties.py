"""Properties of packing on any pod and node: the replicas fit in every resource asked for and
one more would not fit in the limiting one, which is named (the first on a tie); the EKS
kube-reserved CPU steps and the kubelet's storage allocatable follow their documented figures."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.serving import apply_overrides, list_profiles, load_profile
from trnspec.hardware.model_shapes import resolve_shape
from trnspec.hardware.packing import (
    DEFAULT_ROOT_VOLUME_GIB,
    Resources,
    _kube_reserved_cpu,
    ephemeral_storage_allocatable_gib,
    kubelet_disk,
    node_allocatable,
    placement_for,
    pod_requests,
    replicas_per_node,
    staged_storage_gib,
)

SETTINGS = settings(max_examples=200, deadline=None)
FIELDS = {"chips": "aws.amazon.com/neuron", "cpu": "cpu", "memory_gib": "memory"}
FIELDS["ephemeral_gib"] = "ephemeral-storage"

pods = st.builds(
    Resources,
    chips=st.integers(1, 16),
    cpu=st.sampled_from([0.0, 0.5, 1.0, 3.0, 11.0, 170.0]),
    memory_gib=st.sampled_from([0.0, 1.0, 7.5, 115.0, 1800.0]),
    ephemeral_gib=st.sampled_from([0.0, 32.0, 100.0, 800.0]),
)
nodes = st.builds(
    Resources,
    chips=st.integers(0, 16),
    cpu=st.floats(0, 192),
    memory_gib=st.floats(0, 2048),
    ephemeral_gib=st.floats(0, 7000),
)


@SETTINGS
@given(pods, nodes)
def test_the_replicas_fit_every_resource_and_one_more_overflows_the_limiting_one(pod, node):
    packing = replicas_per_node(pod, node)
    asked = {f: getattr(pod, f) for f in FIELDS if getattr(pod, f) > 0}
    for field, ask in asked.items():
        assert packing.replicas * ask <= getattr(node, field) + 1e-6
    limit = next(f for f, name in FIELDS.items() if name == packing.limit)
    assert limit in asked
    assert (packing.replicas + 1) * asked[limit] > getattr(node, limit) - 1e-6
    quotients = [math.floor(getattr(node, f) / a + 1e-9) for f, a in asked.items()]
    first_min = list(asked)[quotients.index(min(quotients))]
    assert limit == first_min  # a tie names the first of chips, cpu, memory, storage
    assert packing.reason.startswith(f"{packing.limit}: {packing.replicas} x ")


def test_an_exact_multiple_fits_exactly():
    pod = Resources(chips=4, cpu=10.0, memory_gib=100.0, ephemeral_gib=50.0)
    node = Resources(chips=16, cpu=40.0, memory_gib=400.0, ephemeral_gib=200.0)
    assert replicas_per_node(pod, node).replicas == 4
    assert replicas_per_node(pod, node).limit == "aws.amazon.com/neuron"


@pytest.mark.parametrize(
    ("vcpus", "reserved"),
    # EKS: 6 % of the first core, 1 % of the second, 0.5 % of the third and fourth, 0.25 % above
    [(1, 0.06), (2, 0.07), (3, 0.075), (4, 0.08), (8, 0.09), (192, 0.08 + 188 * 0.0025)],
)
def test_kube_reserved_cpu_follows_the_eks_steps(vcpus, reserved):
    assert _kube_reserved_cpu(vcpus) == pytest.approx(reserved)


@SETTINGS
@given(st.integers(1, 512))
def test_kube_reserved_cpu_grows_with_the_node_but_slower_than_it(vcpus):
    more = _kube_reserved_cpu(vcpus + 1) - _kube_reserved_cpu(vcpus)
    assert 0 < more <= 0.06


@SETTINGS
@given(st.integers(2, 20_000))
def test_storage_allocatable_is_ninety_percent_of_the_disk_less_a_gib_in_whole_gib(disk):
    got = ephemeral_storage_allocatable_gib(disk)
    assert got == math.floor(disk * 0.9 + 1e-9) - 1
    assert ephemeral_storage_allocatable_gib(disk + 10) == got + 9


@pytest.mark.parametrize(
    ("pod", "says"),
    [
        (
            Resources(4, 1.0, 1.0, 1.0),
            "aws.amazon.com/neuron: 4 x 4 per replica within 16 allocatable",
        ),
        (Resources(1, 50.0, 1.0, 1.0), "cpu: 3 x 50 per replica within 170 allocatable"),
        (
            Resources(1, 1.0, 150.0, 1.0),
            "memory: 2 x 150 GiB per replica within 300 GiB allocatable",
        ),
        (
            Resources(1, 1.0, 1.0, 90.0),
            "ephemeral-storage: 1 x 90 GiB per replica within 100 GiB allocatable",
        ),
    ],
)
def test_the_reason_gives_the_figures_with_gib_for_memory_and_storage_only(pod, says):
    node = Resources(chips=16, cpu=170.0, memory_gib=300.0, ephemeral_gib=100.0)
    assert replicas_per_node(pod, node).reason == says


@pytest.mark.parametrize("instance_type", ["trn2.48xlarge", "trn2.3xlarge"])
def test_booted_memory_is_less_the_vm_overhead_and_the_kubelets_reservation(instance_type):
    """AL2023 nodeadm: 11 MiB per pod (110 pods) + 255 MiB reserved + 100 MiB eviction, after
    7.5 % VM overhead."""
    from trnspec.hardware.packing import node_allocatable
    from trnspec.hardware.topology import instance

    expected = instance(instance_type).memory_gib * 0.925 - (11 * 110 + 255 + 100) / 1024
    assert node_allocatable(instance_type).memory_gib == pytest.approx(expected, abs=1e-9)


@SETTINGS
@given(st.integers(2, 20_000))
def test_storage_allocatable_is_whole_gib(disk):
    assert isinstance(ephemeral_storage_allocatable_gib(disk), int)


TRN2_PROFILES = [p for p in list_profiles() if load_profile(p).hardware.instance_type != "cpu"]


@pytest.mark.parametrize("profile", TRN2_PROFILES)
def test_a_placement_asks_for_the_staged_storage_on_the_node_the_kubelet_offers(profile):
    """A replica's requests are its TP group's share of the node plus what it stages; the node is
    what the kubelet of that instance type offers; the packing is the quotient of the two."""
    cfg = load_profile(profile)
    staged = staged_storage_gib(cfg)
    placement = placement_for(cfg)
    assert staged is not None and placement is not None
    itype = cfg.hardware.instance_type
    pod = pod_requests(itype, cfg.tensor_parallel_size, cfg.hardware.lnc, staged.gib)
    assert placement.pod == pod and placement.pod.ephemeral_gib == staged.gib
    assert placement.node == node_allocatable(itype)
    assert placement.packing == replicas_per_node(pod, placement.node)
    assert placement.disk == kubelet_disk(itype, DEFAULT_ROOT_VOLUME_GIB)[1]
    # a size the deploy sets replaces the staged one
    given_size = placement_for(cfg, ephemeral_gib=staged.gib + 50)
    assert given_size is not None and given_size.pod.ephemeral_gib == staged.gib + 50


def test_without_an_instance_store_the_root_volume_is_the_kubelets_disk():
    cfg = apply_overrides(
        load_profile("qwen3-4b-baseline"), ["hardware.instance_type=trn2u.48xlarge"]
    )
    small, large = placement_for(cfg, 100, 300), placement_for(cfg, 100, 3000)
    assert small is not None and large is not None
    assert (small.disk, large.disk) == ("root EBS volume (300 GiB)", "root EBS volume (3000 GiB)")
    assert small.node.ephemeral_gib < large.node.ephemeral_gib


def test_staged_storage_names_the_target_and_the_drafter_it_counts():
    plain_cfg, spec_cfg = load_profile("qwen3-4b-baseline"), load_profile("qwen3-4b-dflash")
    plain, spec = staged_storage_gib(plain_cfg), staged_storage_gib(spec_cfg)
    target = resolve_shape(plain_cfg.target)
    assert plain is not None and spec is not None and target is not None
    assert plain.source.split(": ")[0] == target.name
    named = spec.source.split(": ")[0].split(" + ")
    assert named[0] == target.name and len(named) == 2
    assert spec.weights_gib > plain.weights_gib
    assert staged_storage_gib(load_profile("local-tiny")) is None
