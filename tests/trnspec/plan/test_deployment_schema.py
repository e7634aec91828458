"""A plan and the deploy read one deployment config the same way (trnspec.plan.deployment_schema):
the same defaults for a pool and the serving section, the same values accepted or refused, and
`--set` walks a path as `cdk -c` does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError
from trnspec.boundary.errors import BoundaryError
from trnspec.plan.deployment_schema import PLAN_KIND, default_container, set_dotted
from trnspec.plan.document import PLAN_KIND as WRITTEN_KIND
from trnspec.plan.pools import DeploymentConfig, Pool, deployment_config

from infra.settings.loading import SettingsError, apply_overrides
from infra.settings.models import DeploymentSettings, Trn2PoolSettings
from infra.settings.plan_file import PLAN_KIND as READ_KIND
from infra.settings.serving import ServingSettings


def _plan(doc: dict[str, Any], sets: tuple[str, ...] = ()) -> DeploymentConfig:
    return deployment_config("c.yaml", doc, sets)


def _deployed_pool(entry: dict[str, Any]) -> Pool:
    s = Trn2PoolSettings.model_validate(entry)
    return Pool(s.name, s.instance_type, s.max_size, s.lnc)


def test_a_pool_given_by_name_only_has_the_deploys_defaults() -> None:
    (pool,) = _plan({"trn2_pools": [{"name": "p"}]}).pools
    assert pool == _deployed_pool({"name": "p"})


def test_a_config_without_serving_has_the_deploys_serving_defaults() -> None:
    config = _plan({"trn2_pools": [{"name": "p"}]})
    deployed = ServingSettings()
    assert config.scale_to_zero == deployed.scale_to_zero
    assert config.max_startup_minutes == deployed.max_startup_minutes


def test_the_pool_a_missing_trn2_pools_section_gets_is_the_deploys_default_pool() -> None:
    (entry,) = default_container(["trn2_pools"], 0)
    assert (Trn2PoolSettings.model_validate(entry),) == DeploymentSettings().trn2_pools


@pytest.mark.parametrize(
    "entry",
    [
        {"max_size": 1},
        {"max_size": 64},
        {"max_size": 0},
        {"max_size": 65},
        {"max_size": True},
        {"max_size": 2.5},
        {"lnc": 1},
        {"lnc": 3},
        {"lnc": True},
        {"instance_type": "trn2.3xlarge"},
        {"instance_type": "p5.48xlarge"},
    ],
)
def test_a_pool_value_is_accepted_by_the_plan_exactly_when_the_deploy_accepts_it(
    entry: dict[str, Any],
) -> None:
    entry = {"name": "p", **entry}
    try:
        deployed: Pool | None = _deployed_pool(entry)
    except ValidationError:
        deployed = None
    try:
        (planned,) = _plan({"trn2_pools": [entry]}).pools
    except BoundaryError:
        planned = None
    assert planned == deployed


@pytest.mark.parametrize(
    "serving",
    [
        {"scale_to_zero": True},
        {"scale_to_zero": "yes"},
        {"scale_to_zero": 2},
        {"max_startup_minutes": 30},
        {"max_startup_minutes": 0},
        {"max_startup_minutes": 10_000},
        {"max_startup_minutes": True},
    ],
)
def test_a_serving_value_is_accepted_by_the_plan_exactly_when_the_deploy_accepts_it(
    serving: dict[str, Any],
) -> None:
    try:
        s = ServingSettings.model_validate(serving)
        deployed: tuple[bool, int] | None = (s.scale_to_zero, s.max_startup_minutes)
    except ValidationError:
        deployed = None
    try:
        c = _plan({"trn2_pools": [{"name": "p"}], "serving": serving})
        planned: tuple[bool, int] | None = (c.scale_to_zero, c.max_startup_minutes)
    except BoundaryError:
        planned = None
    assert planned == deployed


DOC = {"trn2_pools": [{"name": "a"}, {"name": "b", "max_size": 1}], "serving": {"profile": "x"}}


@pytest.mark.parametrize(
    "assignment",
    [
        "trn2_pools.1.max_size=4",
        "trn2_pools.b.lnc=1",
        "trn2_pools.a.instance_type=trn2.3xlarge",
        "serving.scale_to_zero=true",
        "serving.max_startup_minutes=45",
    ],
)
def test_set_changes_the_config_as_cdk_context_does(assignment: str) -> None:
    key, _, raw = assignment.partition("=")
    deployed = apply_overrides(DOC, {key: raw})
    assert _plan(DOC, (assignment,)) == _plan(deployed)
    assert deployed != DOC


@pytest.mark.parametrize("key", ["trn2_pools.c.max_size", "trn2_pools.2.max_size", "a..b"])
def test_a_path_the_config_does_not_have_is_refused_by_both(key: str) -> None:
    with pytest.raises(SettingsError):
        apply_overrides(DOC, {key: "3"})
    with pytest.raises(BoundaryError) as err:
        _plan(DOC, (f"{key}=3",))
    assert err.value.field == "--set"


def test_the_walker_sets_in_place_and_makes_missing_sections() -> None:
    doc: dict[str, Any] = {}
    assert set_dotted(doc, "trn2_pools.trn2.max_size", "5") is None
    assert set_dotted(doc, "vpc.nat_gateways", "0") is None
    assert doc == {"trn2_pools": [{"name": "trn2", "max_size": 5}], "vpc": {"nat_gateways": 0}}
    before = copy.deepcopy(doc)
    assert set_dotted(doc, "vpc.nat_gateways.x", "1") == "vpc.nat_gateways is not a section"
    assert doc == before


def test_the_plan_file_kind_written_is_the_kind_the_deploy_reads() -> None:
    assert WRITTEN_KIND == READ_KIND == PLAN_KIND


#: Four pools: a digit another script reads as 3 (`int("٣") == 3`) would name the last one.
FOUR_POOLS: dict[str, Any] = {"trn2_pools": [{"name": f"p{i}", "max_size": 1} for i in range(4)]}


@pytest.mark.parametrize(
    "index", ["²", "٣", "\uff13", "0²", "³", "1_0", " 1", "+1", "-1", "0x1", "1" * 40]
)
def test_an_index_is_ascii_digits_only(index: str) -> None:
    """`str.isdigit()` accepts '²' (which int() refuses: a ValueError), and int() reads '٣' and
    a fullwidth three as 3: a list segment is an index only when it is ASCII digits, else it is
    looked up as a pool name and refused in one line naming the segment, by the walker, by
    `cdk -c` and by plan-deploy's --set alike; the document is left as it was."""
    key = f"trn2_pools.{index}.max_size"
    doc = copy.deepcopy(FOUR_POOLS)
    fix = set_dotted(doc, key, "4")
    assert fix == f"no item {index!r} in trn2_pools (indexes 0..3 or a pool name)"
    assert doc == FOUR_POOLS
    with pytest.raises(SettingsError) as settings_error:
        apply_overrides(FOUR_POOLS, {key: "4"})
    assert [p.field for p in settings_error.value.problems] == [key]
    with pytest.raises(BoundaryError) as flag_error:
        _plan(FOUR_POOLS, (f"{key}=4",))
    assert flag_error.value.field == "--set" and "\n" not in str(flag_error.value)


def test_an_ascii_index_sets_that_pool() -> None:
    doc = copy.deepcopy(FOUR_POOLS)
    assert set_dotted(doc, "trn2_pools.3.max_size", "4") is None
    assert [p["max_size"] for p in doc["trn2_pools"]] == [1, 1, 1, 4]
