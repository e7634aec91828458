"""The ramp `plan-deploy` prints is the one the deployment runs: its scale-up policy is the
rendered ScaledObject's, for any plan's replicas, with and without scale to zero, and for the
committed default plan; and plan-deploy reads a config's scale_to_zero as infra deploys it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from platform_synth import ADMIN
from trnspec.boundary.errors import BoundaryError
from trnspec.plan.ramp import deployed_policy, ramp
from trnspec.plan.readers.evidence import read_deployment_config
from workload_cases import build, by_kind

from infra.app.composition import check_profile
from infra.settings.loading import load_settings
from infra.settings.serving import ServingSettingsError, load_serving_settings

REPO = Path(__file__).resolve().parents[4]


def _scale_up(scaled_object: dict[str, Any]) -> tuple[int, int]:
    """The (pods, periodSeconds) of the rendered scaleUp policy (one Pods policy)."""
    behavior = scaled_object["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    (policy,) = behavior["scaleUp"]["policies"]
    assert policy["type"] == "Pods"
    return policy["value"], policy["periodSeconds"]


def _hpa_periods(pods: int, floor: int, peak: int) -> int:
    """Periods the HPA takes from `floor` to `peak` adding at most `pods` per period."""
    replicas, periods = floor, 0
    while replicas < peak:
        replicas, periods = min(peak, replicas + pods), periods + 1
    return periods


@pytest.mark.parametrize("scale_to_zero", [False, True])
@pytest.mark.parametrize(
    ("min_replicas", "peak_replicas"), [(1, 16), (1, 2), (1, 64), (4, 5), (2, 9), (3, 3)]
)
def test_the_plans_ramp_uses_the_rendered_scale_up_policy(
    min_replicas: int, peak_replicas: int, scale_to_zero: bool
) -> None:
    # plan-deploy writes min_replicas and its replicas at peak as serving.{min,max}_replicas;
    # scale_to_zero stays the config's, and plan-deploy's floor is 0 when it is set
    built = build(
        min_replicas=min_replicas, max_replicas=peak_replicas, scale_to_zero=scale_to_zero
    )
    so = by_kind(built[2], "ScaledObject")
    floor = so["spec"]["minReplicaCount"]
    assert floor == (0 if scale_to_zero else min_replicas)
    pods, period = _scale_up(so)
    policy = deployed_policy(floor, peak_replicas)
    assert (policy.pods, policy.period_s) == (pods, period)
    r = ramp(floor, peak_replicas, 1, peak_replicas, 10.0, 256, policy)
    periods = _hpa_periods(pods, floor, peak_replicas)
    assert (r.steps, r.scale_up_s) == (periods, periods * period)


def test_the_committed_default_plans_ramp_is_the_default_deployments() -> None:
    plan = yaml.safe_load((REPO / "config" / "plans" / "default.yaml").read_text())
    workload = check_profile("default", ADMIN).workload
    assert workload is not None
    settings = workload.settings
    assert (settings.min_replicas, settings.max_replicas) == (
        plan["serving"]["min_replicas"],
        plan["serving"]["max_replicas"],
    )
    (main,) = [
        m
        for m in workload.manifests.keda
        if m["kind"] == "ScaledObject" and m["spec"]["scaleTargetRef"]["name"] == workload.spec.name
    ]
    pods, period = _scale_up(main)
    periods = _hpa_periods(pods, settings.min_replicas, settings.max_replicas)
    assert f"in {periods} step(s) at {pods} pod(s) per {period} s" in plan["plan"]["ramp"][0]


def test_scale_to_zero_of_every_shipped_config_is_what_infra_deploys() -> None:
    # the plan file never sets scale_to_zero: the config's value is what the autoscaler runs
    for path in sorted((REPO / "config").glob("*.yaml")):
        deployed = load_serving_settings(load_settings(path.stem).serving)
        assert read_deployment_config(str(path)).scale_to_zero is deployed.scale_to_zero, path
    assert read_deployment_config(str(REPO / "config/first-node.yaml")).scale_to_zero is True


@pytest.mark.parametrize("value", [True, False, "yes", "off", 1, 0, "true", 2, "maybe", None, [1]])
def test_scale_to_zero_takes_exactly_what_the_serving_settings_take(
    tmp_path: Path, value: object
) -> None:
    try:
        expected: bool | None = load_serving_settings({"scale_to_zero": value}).scale_to_zero
    except ServingSettingsError:
        expected = None
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump({"trn2_pools": [{"name": "p"}], "serving": {"scale_to_zero": value}})
    )
    try:
        read: bool | None = read_deployment_config(str(path)).scale_to_zero
    except BoundaryError as err:
        assert str(err).startswith(
            ("serving.scale_to_zero=", "serving.scale_to_zero:")
        ) and "\n" not in str(err)
        read = None
    assert read == expected
