"""Where Trn2 types can be had: the table equals EC2's own answers as moto 5.2.6 bundles them
(DescribeInstanceTypeOfferings per region and zone, DescribeInstanceTypes' usage classes and
instance store), and a pool in a region without its type is refused before a deploy."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import moto
import pytest
from aws_cdk import App
from platform_synth import ADMIN
from trnspec.hardware.pricing import REGIONAL_PRICES
from trnspec.hardware.topology import INSTANCE_TYPES

from infra.app.composition import compose
from infra.platform.cluster.offerings import OFFERINGS, offering_problems
from infra.settings import SettingsError, load_settings

EC2_DATA = Path(moto.__file__).parent / "ec2" / "resources"
TRN2 = ("trn2.3xlarge", "trn2.48xlarge")


def _load(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _ec2_offerings() -> dict[tuple[str, str], set[str]]:
    zones: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted((EC2_DATA / "instance_type_offerings" / "availability-zone").iterdir()):
        region = path.name.split(".")[0]
        for o in _load(path):
            if o["InstanceType"] in TRN2:
                zones[(o["InstanceType"], region)].add(o["Location"])
    return zones


def _instance_types() -> dict[str, Any]:
    path = next(p for p in EC2_DATA.iterdir() if p.name.startswith("instance_types.json"))
    return _load(path)


def test_the_table_is_what_ec2_says_per_region_and_zone() -> None:
    table = {(o.instance_type, o.region): set(o.zones) for o in OFFERINGS}
    assert table == _ec2_offerings()


def test_the_purchase_options_are_ec2s_usage_classes() -> None:
    types = _instance_types()
    for o in OFFERINGS:
        assert set(o.purchase) == set(types[o.instance_type]["SupportedUsageClasses"])


@pytest.mark.parametrize("name", TRN2)
def test_the_topology_table_matches_ec2s_instance_description(name: str) -> None:
    ec2 = _instance_types()[name]
    ours = INSTANCE_TYPES[name]
    assert ours.vcpus == ec2["VCpuInfo"]["DefaultVCpus"]
    assert ours.memory_gib * 1024 == ec2["MemoryInfo"]["SizeInMiB"]
    assert ours.instance_store_gb == ec2["InstanceStorageInfo"]["TotalSizeInGB"]


def test_a_pool_in_a_region_without_its_type_is_refused_naming_where_it_is_sold() -> None:
    with pytest.raises(SettingsError) as err:
        compose(
            App(),
            load_settings(
                "first-node",
                {
                    **ADMIN,
                    "region": "us-east-1",
                    "vpc.availability_zones": "[us-east-1a, us-east-1b]",
                    "trn2_pools.0.availability_zone": "null",
                },
            ),
        )
    lines = [str(p) for p in err.value.problems]
    (line,) = [x for x in lines if x.startswith("trn2_pools.0.instance_type")]
    assert "EC2 does not offer it in us-east-1" in line
    assert "ap-south-2, ap-southeast-4, sa-east-1" in line


def test_a_zone_that_does_not_offer_the_type_is_refused() -> None:
    overrides = {
        **ADMIN,
        "region": "ap-southeast-4",
        "vpc.availability_zones": "[ap-southeast-4a, ap-southeast-4c]",
        "trn2_pools.0.availability_zone": "ap-southeast-4a",
    }
    with pytest.raises(SettingsError) as err:
        compose(App(), load_settings("first-node", overrides))
    lines = [str(p) for p in err.value.problems]
    assert any(
        x.startswith("trn2_pools.0.availability_zone=ap-southeast-4a") and "ap-southeast-4c" in x
        for x in lines
    ), lines


def test_every_region_that_offers_a_type_has_a_price_row_with_its_own_source() -> None:
    offered = {(o.instance_type, o.region) for o in OFFERINGS}
    assert set(REGIONAL_PRICES) == offered


def _refusals(overrides: dict[str, str]) -> list[str]:
    """The first-node profile's problems with these overrides: the settings' own checks, then
    the offerings check (which compose runs; the tests above show it does)."""
    try:
        settings = load_settings("first-node", {**ADMIN, **overrides})
    except SettingsError as err:
        return [str(p) for p in err.problems]
    return [str(p) for p in offering_problems(settings)]


def test_the_first_node_profile_pins_its_pool_to_a_zone_that_offers_its_type() -> None:
    settings = load_settings("first-node", ADMIN)
    (pool,) = settings.trn2_pools
    found = next(
        o for o in OFFERINGS if (o.instance_type, o.region) == (pool.instance_type, settings.region)
    )
    assert pool.availability_zone in found.zones
    assert _refusals({}) == []


def test_an_unpinned_node_group_over_a_zone_without_its_type_is_refused_naming_the_zone() -> None:
    """EKS refuses to create a managed node group with a subnet in a zone that lacks the type:
    an unpinned pool spans every VPC zone, so ap-south-2a (no trn2 there) must be caught."""
    lines = _refusals({"trn2_pools.0.availability_zone": "null"})
    (line,) = [x for x in lines if x.startswith("trn2_pools.0.availability_zone")]
    assert "ap-south-2a" in line
    assert "set it to one of ap-south-2b" in line


def test_an_unpinned_pool_is_accepted_where_every_vpc_zone_offers_its_type() -> None:
    assert (
        _refusals(
            {
                "trn2_pools.0.availability_zone": "null",
                "region": "sa-east-1",
                "vpc.availability_zones": "[sa-east-1a, sa-east-1c]",
            }
        )
        == []
    )


def test_karpenter_needs_only_one_vpc_zone_that_offers_the_type() -> None:
    unpinned = {"trn2_pools.0.availability_zone": "null", "autoscaler": "karpenter"}
    assert _refusals(unpinned) == []
    lines = _refusals({**unpinned, "vpc.availability_zones": "[ap-south-2a, ap-south-2c]"})
    assert any(x.startswith("vpc.availability_zones") and "ap-south-2b" in x for x in lines), lines


def _default_in(deploy_region: str | None, **overrides: str) -> list[str]:
    """The default profile (no region of its own) checked for the region cdk deploy targets."""
    settings = load_settings("default", {**ADMIN, **overrides})
    assert settings.region is None
    return [str(p) for p in offering_problems(settings, deploy_region)]


def test_without_a_region_the_deploy_target_region_is_checked_and_named():
    (line,) = _default_in("us-east-1")
    assert line.startswith("region: not set, so cdk deploy targets us-east-1")
    assert "one of ap-south-2, us-east-2" in line


def test_an_offline_synth_or_a_region_offering_the_type_in_every_zone_passes():
    assert _default_in(None) == []
    assert _default_in("us-east-2") == []


def test_without_a_region_a_one_zone_offering_asks_for_the_zones_to_be_named():
    """ap-south-2 sells trn2.48xlarge in one zone; a new VPC takes two zones at deploy, so a
    managed node group over both would fail to create: name region, zones and the pool's zone."""
    (line,) = _default_in("ap-south-2")
    assert line.startswith("trn2_pools.0.availability_zone: ")
    assert "-c region=ap-south-2" in line and "availability_zone to ap-south-2b" in line
    assert _default_in("ap-south-2", autoscaler="karpenter") == []


def test_the_profile_region_wins_over_the_deploy_target_region():
    assert _refusals({}) == []
    settings = load_settings("first-node", ADMIN)
    assert offering_problems(settings, "us-east-1") == []
