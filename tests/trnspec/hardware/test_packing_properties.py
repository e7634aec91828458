"""Properties of packing on any pod and node: the replicas fit in every resource asked for and
one more would not fit in the limiting one, which is named (the first on a tie); the EKS
kube-reserved CPU steps and the kubelet's storage allocatable follow their documented figures."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.hardware.packing import (
    Resources,
    _kube_reserved_cpu,
    ephemeral_storage_allocatable_gib,
    replicas_per_node,
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
