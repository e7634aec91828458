"""infra.app.composition.check_profile: one pass over a deployment profile lists every problem."""

from __future__ import annotations

import pytest
from platform_synth import ADMIN, ADMIN_ARN

from infra.app.composition import check_profile
from infra.settings import SettingsError

#: The default profile deploys its plan, which refuses another engine: these pick one without it.
NO_PLAN = {"serving.plan": "none"}


def fields(err: SettingsError) -> list[str]:
    return [p.field for p in err.problems]


def test_a_valid_profile_gives_its_settings_and_the_workload_derived_once() -> None:
    checked = check_profile("default", ADMIN)
    assert checked.settings.serving["profile"] == "qwen3-4b-baseline"
    assert checked.settings.admin_principal_arns == (ADMIN_ARN,)
    assert checked.workload.config.target.name == checked.workload.spec.served_model_name


def test_a_deploy_without_a_cluster_admin_is_refused_naming_the_setting() -> None:
    """The deployer is not admin through the creator's entry (CloudFormation's execution role
    is): without a named principal, kubectl and smoke.py --stack would be refused."""
    with pytest.raises(SettingsError) as err:
        check_profile("default")
    (problem,) = err.value.problems
    line = str(problem)
    assert line.startswith("admin_principal_arns=[]: name the IAM role or user you deploy")
    assert "-c admin_principal_arns='[arn:aws:iam::ACCOUNT:role/NAME]'" in line
    assert "\n" not in line


def test_bad_deployment_settings_and_a_bad_serving_section_are_listed_together() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile(
            "default",
            {
                "cluster_name": "9bad",
                "serving.max_replicas": "0",
                "serving.profile": "nope",
                **NO_PLAN,
            },
        )
    assert {"cluster_name", "serving.max_replicas", "serving.profile"} <= set(fields(err.value))
    assert "serving.profile=nope: unknown profile" in str(err.value)


def test_a_bad_engine_override_is_listed_with_the_deployment_problems() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile(
            "default",
            {
                "kubernetes_version": "1.20",
                "serving.overrides": ["tensor_parallel_size=48"],
                **NO_PLAN,
            },
        )
    assert "kubernetes_version" in fields(err.value)
    assert "tensor_parallel_size" in fields(err.value)


def test_the_platform_is_checked_against_the_workload_when_both_are_valid() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile("default", {**ADMIN, "trn2_pools.0.lnc": "1"})
    assert fields(err.value) == ["trn2_pools.0.lnc"]


def test_an_unknown_profile_is_one_problem() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile("nope")
    assert fields(err.value) == ["profile"]


@pytest.mark.parametrize("profile", ["qwen3-32b-draft", "qwen3-32b-baseline", "llama31-70b-draft"])
def test_a_fork_profile_is_refused_for_deployment_with_the_runtime_reason_and_the_fix(
    profile: str,
) -> None:
    with pytest.raises(SettingsError) as err:
        check_profile("default", {**ADMIN, **NO_PLAN, "serving.profile": profile})
    (problem,) = err.value.problems
    assert (problem.field, problem.value) == ("serving.profile", profile)
    assert "carries Neuron runtime 2.28" in problem.fix
    assert "requires runtime 2.33 or later" in problem.fix
    assert "no pool setting pins an older AMI release" in problem.fix
    assert "deploy a neuron-plugin profile" in problem.fix


def test_a_fork_image_set_by_override_is_refused_too() -> None:
    with pytest.raises(SettingsError) as err:
        check_profile(
            "default",
            {
                **ADMIN,
                **NO_PLAN,
                "serving.profile": "qwen3-4b-baseline",
                "serving.overrides": ["image=neuron-fork", "sequence_buckets=[8192]"],
            },
        )
    assert any("carries Neuron runtime 2.28" in p.fix for p in err.value.problems)


@pytest.mark.parametrize("image", ["neuron-plugin", "neuron-plugin-sdk2.32"])
def test_plugin_images_pass_the_runtime_check(image: str) -> None:
    checked = check_profile(
        "default", {**ADMIN, **NO_PLAN, "serving.overrides": [f"image={image}"]}
    )
    assert checked.settings.serving["overrides"] == [f"image={image}"]
    assert checked.workload.config.image == image
