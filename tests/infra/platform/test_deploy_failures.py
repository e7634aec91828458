"""How the platform template fails when something goes wrong, read from the synthesized template:
an EKS add-on created over a self-managed one still installs, and a Helm release that never
becomes ready fails its resource, and rolls the stack back, before the Lambda running Helm is
killed (a killed Lambda answers nothing, and CloudFormation then waits an hour)."""

from __future__ import annotations

from typing import Any

import pytest
from platform_synth import PROFILES, Synth

from infra.settings import load_settings
from infra.settings.loading import SettingsError

#: What the kubectl handler needs besides Helm's wait (cold start, kubeconfig, the chart's
#: download, reporting Helm's error): at least a minute of its Lambda's time.
MIN_MARGIN_SECONDS = 60


def _seconds(timeout: str) -> int:
    """A HelmChart `Timeout` ("780s") in seconds."""
    assert timeout.endswith("s"), timeout
    return int(timeout[:-1])


def _function(synth: Synth, ref: Any) -> dict[str, Any]:
    """The AWS::Lambda::Function a `Fn::GetAtt [id, Arn]` names."""
    logical_id, attribute = ref["Fn::GetAtt"]
    assert attribute == "Arn"
    function: dict[str, Any] = synth.raw["Resources"][logical_id]
    assert function["Type"] == "AWS::Lambda::Function"
    return function


def _lambda_chain_timeouts(synth: Synth, service_token: Any) -> list[int]:
    """Timeouts (s) of every Lambda a custom resource's request passes through: the provider
    framework's onEvent function and the user handler it invokes synchronously."""
    framework = _function(synth, service_token)
    timeouts = [framework["Properties"]["Timeout"]]
    variables = framework["Properties"].get("Environment", {}).get("Variables", {})
    if "USER_ON_EVENT_FUNCTION_ARN" in variables:
        handler = _function(synth, variables["USER_ON_EVENT_FUNCTION_ARN"])
        timeouts.append(handler["Properties"]["Timeout"])
    return timeouts


@pytest.mark.parametrize("profile", PROFILES)
def test_every_eks_addon_overwrites_the_self_managed_one_it_replaces(
    platform_synth: Any, profile: str
) -> None:
    addons = platform_synth(profile).resources("AWS::EKS::Addon")
    names = {a["Properties"]["AddonName"] for a in addons.values()}
    # The three a new cluster already runs self-managed (BootstrapSelfManagedAddons unset).
    assert {"vpc-cni", "kube-proxy", "coredns"} <= names
    for logical_id, addon in addons.items():
        assert addon["Properties"].get("ResolveConflicts") == "OVERWRITE", logical_id


def test_the_cluster_leaves_bootstrap_self_managed_addons_unset(platform_synth: Any) -> None:
    """Why OVERWRITE is needed: EKS installs its own vpc-cni, kube-proxy and coredns first."""
    (cluster,) = platform_synth("default").resources("AWS::EKS::Cluster").values()
    assert cluster["Properties"].get("BootstrapSelfManagedAddons", True) is True


@pytest.mark.parametrize("profile", PROFILES)
def test_every_helm_wait_ends_before_the_lambda_running_it_is_killed(
    platform_synth: Any, profile: str
) -> None:
    synth = platform_synth(profile)
    charts = synth.resources("Custom::AWSCDK-EKS-HelmChart")
    assert charts
    for logical_id, chart in charts.items():
        props = chart["Properties"]
        helm = _seconds(props["Timeout"])
        lambdas = _lambda_chain_timeouts(synth, props["ServiceToken"])
        assert len(lambdas) == 2, logical_id  # the framework and the kubectl handler
        assert helm + MIN_MARGIN_SECONDS <= min(lambdas), (logical_id, helm, lambdas)


def test_a_helm_wait_as_long_as_the_lambda_is_refused_in_one_line() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"addons.helm_timeout_minutes": "15"})
    (problem,) = err.value.problems
    assert problem.field == "addons.helm_timeout_minutes"
    assert problem.value == 15
    assert "at most 13" in problem.fix and "Lambda" in problem.fix
    assert "\n" not in str(problem)


def test_the_longest_allowed_helm_wait_still_fits() -> None:
    assert load_settings("default", {"addons.helm_timeout_minutes": "13"}).addons
