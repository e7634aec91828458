"""infra.composition.check_profile: one pass over a deployment profile lists every problem."""

from __future__ import annotations

import pytest

from infra.composition import check_profile
from infra.settings import SettingsError


def fields(err: SettingsError) -> list[str]:
    return [p.field for p in err.problems]


def test_a_valid_profile_gives_its_settings() -> None:
    assert check_profile("default").settings.serving["profile"] == "qwen3-4b-dflash"


def test_bad_deployment_settings_and_a_bad_serving_section_are_listed_together() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile(
            "default",
            {"cluster_name": "9bad", "serving.max_replicas": "0", "serving.profile": "nope"},
        )
    assert {"cluster_name", "serving.max_replicas", "serving.profile"} <= set(fields(err.value))
    assert "serving.profile=nope: unknown profile" in str(err.value)


def test_a_bad_engine_override_is_listed_with_the_deployment_problems() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile(
            "default",
            {"kubernetes_version": "1.20", "serving.overrides": ["tensor_parallel_size=48"]},
        )
    assert "kubernetes_version" in fields(err.value)
    assert "tensor_parallel_size" in fields(err.value)


def test_the_platform_is_checked_against_the_workload_when_both_are_valid() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile("default", {"trn2_pools.0.lnc": "1"})
    assert fields(err.value) == ["trn2_pools.0.lnc"]


def test_an_unknown_profile_is_one_problem() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile("nope")
    assert fields(err.value) == ["profile"]
