"""Synth refuses settings that leave the serving pods Pending forever: no Trn2 pool makes a node
their nodeSelector and requests fit (infra/platform/cluster/placement.py), one line per problem
naming the pool field, its value and the fix."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App
from platform_synth import ADMIN

from infra.app.composition import compose, preflight
from infra.platform.cluster.neuron_node import ephemeral_storage_allocatable_gib
from infra.platform.cluster.placement import (
    gib,
    min_root_volume_gib,
    placement_problems,
    pool_packing,
)
from infra.settings import SettingsError, Trn2PoolSettings, list_profiles, load_settings

VARIANTS = ({}, {"serving.weights_storage": "ebs"}, {"serving.internal_nlb": "true"})


def _refusal(overrides: dict[str, str], profile: str = "default") -> list[str]:
    with pytest.raises(SettingsError) as err:
        compose(App(), load_settings(profile, {**ADMIN, **overrides}))
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("profile", list_profiles())
@pytest.mark.parametrize("variant", VARIANTS, ids=("as-shipped", "ebs", "nlb"))
def test_every_shipped_profile_places_its_pods_on_a_pool(
    profile: str, variant: dict[str, str]
) -> None:
    settings = load_settings(profile, {**ADMIN, **variant})
    manifests = preflight(settings, check_placement=False).workload.manifests.all()
    assert placement_problems(settings.trn2_pools, manifests) == []


#: The default plan is a calibration deployment: both arms' engine overrides set the hardware.
BOTH_ARMS = "serving.overrides and serving.calibration.speculative.overrides"


def test_a_pool_lnc_the_engine_config_does_not_use_is_refused_naming_both_fixes() -> None:
    # One line for every pod that selects the label (the precompile Job and both arms, though
    # the speculative arm stages more), and the engine fix names both arms' overrides: they
    # must run on the same hardware, so changing one alone is refused too.
    (line,) = _refusal({"trn2_pools.0.lnc": "1"})
    assert line.startswith("trn2_pools.0.lnc=1: Job/")
    assert line.endswith(
        "and Deployment/qwen3-4b-baseline and Deployment/qwen3-4b-baseline-spec select "
        "trnspec.io/lnc=2 and no pool's nodes carry it, so they stay Pending: set "
        f"trn2_pools.0.lnc=2, or hardware.lnc=1 in {BOTH_ARMS}"
    )


def test_without_calibration_the_engine_fix_names_the_serving_overrides_alone() -> None:
    (line,) = _refusal(
        {"trn2_pools.0.lnc": "1", "serving.plan": "none", "serving.profile": "qwen3-4b-baseline"}
    )
    assert "-spec" not in line
    assert line.endswith(
        "and Deployment/qwen3-4b-baseline select trnspec.io/lnc=2 and no pool's nodes carry it, "
        "so they stay Pending: set trn2_pools.0.lnc=2, or hardware.lnc=1 in serving.overrides"
    )


def test_a_pool_of_another_instance_type_is_refused() -> None:
    (line,) = _refusal({"trn2_pools.0.instance_type": "trn2u.48xlarge"})
    assert line.startswith("trn2_pools.0.instance_type=trn2u.48xlarge: Job/")
    assert "Deployment/qwen3-4b-baseline-spec select" in line
    assert "select node.kubernetes.io/instance-type=trn2.48xlarge" in line
    assert line.endswith(
        "set trn2_pools.0.instance_type=trn2.48xlarge, "
        f"or hardware.instance_type=trn2u.48xlarge in {BOTH_ARMS}"
    )


#: A pool whose instance type has no instance store known here: the kubelet's disk is the root
#: volume, and the serving pods ask for an explicit 300 GiB.
ROOT_VOLUME_POOL = {
    "trn2_pools.0.instance_type": "trn2u.48xlarge",
    "serving.plan": "none",
    "serving.profile": "qwen3-4b-dflash-3xl",
    "serving.overrides": "[hardware.instance_type=trn2u.48xlarge]",
    "serving.weights_volume_gib": "300",
}


def test_a_root_volume_too_small_for_the_node_local_weights_is_refused_with_the_size() -> None:
    (line,) = _refusal({**ROOT_VOLUME_POOL, "trn2_pools.0.root_volume_gib": "300"})
    assert line.startswith(
        "trn2_pools.0.root_volume_gib=300: its nodes offer 269 GiB of ephemeral storage and Job/"
    )
    assert line.endswith(
        "ask for 300 GiB (serving.weights_volume_gib with weights_storage node-local): set "
        "root_volume_gib to at least 335, or lower serving.weights_volume_gib"
    )
    assert ephemeral_storage_allocatable_gib(335) == 300 > ephemeral_storage_allocatable_gib(334)


def test_the_same_small_volume_is_fine_with_ebs_weights() -> None:
    settings = load_settings(
        "default",
        {
            **ADMIN,
            **ROOT_VOLUME_POOL,
            "trn2_pools.0.root_volume_gib": "300",
            "serving.weights_storage": "ebs",
        },
    )
    manifests = preflight(settings, check_placement=False).workload.manifests.all()
    assert placement_problems(settings.trn2_pools, manifests) == []


def test_a_second_pool_that_fits_is_enough() -> None:
    pools = (
        Trn2PoolSettings(name="small", root_volume_gib=300, instance_type="trn2u.48xlarge"),
        Trn2PoolSettings(name="big", instance_type="trn2u.48xlarge"),
    )
    pod = _pod_on(_pod(devices=1, storage="300Gi"), "trn2u.48xlarge")
    assert placement_problems(pools, [pod]) == []
    (line,) = placement_problems(pools[:1], [pod])
    assert line.field == "trn2_pools.0.root_volume_gib"


def test_more_neuron_devices_than_the_instance_has_is_refused() -> None:
    (line,) = placement_problems((Trn2PoolSettings(name="trn2"),), [_pod(devices=17)])
    assert str(line) == (
        "trn2_pools.0.instance_type=trn2.48xlarge: its nodes have 16 aws.amazon.com/neuron "
        "devices and Deployment/serve ask for 17 (tensor_parallel_size at hardware.lnc): use an "
        "instance type with more chips, or a smaller tensor_parallel_size in serving.overrides"
    )


def test_an_init_container_asking_for_more_than_the_containers_sets_the_request() -> None:
    pod = _pod(devices=1, storage="10Gi")
    spec = pod["spec"]["template"]["spec"]
    spec["initContainers"] = [{"resources": {"requests": {"ephemeral-storage": "500Gi"}}}]
    pool = Trn2PoolSettings(name="trn2", instance_type="trn2u.48xlarge")
    (line,) = placement_problems((pool,), [_pod_on(pod, "trn2u.48xlarge")])
    assert line.field == "trn2_pools.0.root_volume_gib"
    size = min_root_volume_gib(500)
    assert (
        ephemeral_storage_allocatable_gib(size) >= 500 > ephemeral_storage_allocatable_gib(size - 1)
    )


def test_storage_quantities_in_binary_decimal_and_bytes() -> None:
    assert gib("300Gi") == 300
    assert gib("1Ti") == 1024
    assert gib(str(2**30)) == 1
    assert gib("1073741824") == 1
    assert round(gib("500G"), 3) == 465.661


def _pod_on(pod: dict[str, Any], instance_type: str) -> dict[str, Any]:
    pod["spec"]["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = (
        instance_type
    )
    return pod


def _pod(devices: int, storage: str | None = None) -> dict[str, Any]:
    requests = {"aws.amazon.com/neuron": str(devices)}
    if storage:
        requests["ephemeral-storage"] = storage
    return {
        "kind": "Deployment",
        "metadata": {"name": "serve"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {
                        "node.kubernetes.io/instance-type": "trn2.48xlarge",
                        "trnspec.io/lnc": "2",
                    },
                    "containers": [{"resources": {"requests": requests}}],
                }
            }
        },
    }


def test_pods_too_big_for_the_instance_store_are_refused_naming_the_storage_setting() -> None:
    (line,) = placement_problems((Trn2PoolSettings(name="trn2"),), [_pod(1, "7000Gi")])
    assert str(line) == (
        "trn2_pools.0.instance_type=trn2.48xlarge: its nodes offer 6369 GiB of ephemeral "
        "storage (instance store) and Deployment/serve ask for 7000 GiB: lower "
        "serving.weights_volume_gib, or use weights_storage ebs"
    )


def test_the_shipped_default_packs_one_replica_per_chip_of_a_trn2_48xlarge() -> None:
    """Both arms of the calibration default (the main Deployment and the speculative arm,
    which stages a drafter too): 16 replicas per node, bounded by the chips, as the plan priced."""
    settings = load_settings("default", ADMIN)
    workload = preflight(settings, check_placement=False).workload
    deployments = {
        m["metadata"]["name"]: m for m in workload.manifests.all() if m["kind"] == "Deployment"
    }
    assert sorted(deployments) == [workload.spec.name, f"{workload.spec.name}-spec"]
    for deployment in deployments.values():
        pod = deployment["spec"]["template"]["spec"]
        packing = pool_packing(settings.trn2_pools[0], pod)
        assert (packing.replicas, packing.limit) == (16, "aws.amazon.com/neuron")
