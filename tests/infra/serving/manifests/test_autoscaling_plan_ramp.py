"""The ramp `plan-deploy` prints is the one the deployment runs: its scale-up policy is the
rendered ScaledObject's, for any plan's replicas and for the committed default plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from platform_synth import ADMIN
from trnspec.plan.ramp import deployed_policy, ramp
from workload_cases import build, by_kind

from infra.app.composition import check_profile

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


@pytest.mark.parametrize(
    ("min_replicas", "peak_replicas"), [(1, 16), (1, 2), (1, 64), (4, 5), (2, 9), (3, 3)]
)
def test_the_plans_ramp_uses_the_rendered_scale_up_policy(
    min_replicas: int, peak_replicas: int
) -> None:
    # plan-deploy writes min_replicas and its replicas at peak as serving.{min,max}_replicas
    so = by_kind(build(min_replicas=min_replicas, max_replicas=peak_replicas)[2], "ScaledObject")
    pods, period = _scale_up(so)
    policy = deployed_policy(min_replicas, peak_replicas)
    assert (policy.pods, policy.period_s) == (pods, period)
    r = ramp(min_replicas, peak_replicas, 1, peak_replicas, 10.0, 256, policy)
    periods = _hpa_periods(pods, min_replicas, peak_replicas)
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
    pods, period = _scale_up(by_kind(workload.manifests, "ScaledObject"))
    periods = _hpa_periods(pods, settings.min_replicas, settings.max_replicas)
    assert f"in {periods} step(s) at {pods} pod(s) per {period} s" in plan["plan"]["ramp"][0]
