"""What `plan-deploy` says a calibration bills at most (trnspec.plan.idle_cost) is made of what
the deployment renders: the Job's activeDeadlineSeconds, KEDA's poll and cooldown of the arm (and
of the main replica with scale to zero) and the node autoscalers' wait before an empty node goes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from trnspec.boundary.errors import BoundaryError
from trnspec.plan.deploy_plan import Variant
from trnspec.plan.idle_cost import idle_cost
from trnspec.plan.readers.evidence import read_deployment_config
from workload_cases import build

from infra.platform.addons.cluster_autoscaler.install import chart_values
from infra.platform.addons.karpenter.node_pools import node_pool
from infra.settings import SUPPORTED_KUBERNETES_VERSIONS, Trn2PoolSettings
from infra.settings.serving import ServingSettingsError, load_serving_settings

PLAIN = Variant(
    profile="qwen3-4b-baseline",
    speculative=False,
    k=0,
    max_num_seqs=1,
    overrides=(),
    tpot_ms=10.0,
    tokens_per_s_per_replica=100.0,
    min_speedup=1.0,
    replicas_per_node=16,
    packing_reason="chips",
    replicas_at_peak=16,
    nodes_at_peak=1,
    price_per_hour_usd=36.0,
    cost_per_1m_output_tokens_usd=1.0,
    idle_nodes=1,
    idle_cost_per_hour_usd=36.0,
    instance_type="trn2.48xlarge",
)
CALIBRATION = {
    "speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=1"]},
    "concurrency": [1],
    "deadline_minutes": 120,
}


def _minutes(text: str) -> int:
    assert text.endswith("m"), text
    return int(text.removesuffix("m")) * 60


def _scaled(objects: list[dict[str, Any]], arm: bool) -> dict[str, Any]:
    (found,) = [
        o
        for o in objects
        if o["kind"] == "ScaledObject"
        and o["spec"]["scaleTargetRef"]["name"].endswith("-spec") is arm
    ]
    return found


@pytest.mark.parametrize("scale_to_zero", [False, True])
def test_the_bound_is_the_jobs_deadline_then_the_longest_release_then_the_empty_node(
    scale_to_zero: bool,
) -> None:
    _, _, manifests, settings = build(
        "qwen3-4b-baseline",
        calibration=CALIBRATION,
        scale_to_zero=scale_to_zero,
        max_startup_minutes=45,
    )
    objects = manifests.all()
    (job,) = [o for o in objects if o["kind"] == "Job" and "-calibration-" in o["metadata"]["name"]]
    arm, main = _scaled(objects, arm=True), _scaled(objects, arm=False)
    release = arm["spec"]["pollingInterval"] + arm["spec"]["cooldownPeriod"]
    if scale_to_zero:  # the main replica the Job kept up goes only after its own cooldown
        release = max(release, main["spec"]["pollingInterval"] + main["spec"]["cooldownPeriod"])
    karpenter = _minutes(
        node_pool(Trn2PoolSettings(name="trn2"))["spec"]["disruption"]["consolidateAfter"]
    )
    autoscaler = _minutes(
        chart_values("c", SUPPORTED_KUBERNETES_VERSIONS[0], "us-east-1")["extraArgs"][
            "scale-down-unneeded-time"
        ]
    )
    node = max(karpenter, autoscaler)

    arm_variant = replace(PLAIN, profile="qwen3-4b-dflash", speculative=True, k=15)
    held = idle_cost(PLAIN, arm_variant, 1, scale_to_zero, settings.max_startup_minutes).calibrating
    assert held is not None
    assert held.at_most_s == job["spec"]["activeDeadlineSeconds"] + release + node
    assert held.usd_at_most == pytest.approx(36.0 * held.at_most_s / 3600)


@pytest.mark.parametrize("value", [90, 5, 4, 1440, 1441, "60", 60.0, 60.5, True, None, "x"])
def test_plan_deploy_reads_the_startup_budget_exactly_as_the_serving_settings_do(
    tmp_path: Path, value: object
) -> None:
    try:
        expected: int | None = load_serving_settings(
            {"max_startup_minutes": value}
        ).max_startup_minutes
    except ServingSettingsError:
        expected = None
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump({"trn2_pools": [{"name": "p"}], "serving": {"max_startup_minutes": value}})
    )
    try:
        read: int | None = read_deployment_config(str(path)).max_startup_minutes
    except BoundaryError as err:
        assert str(err).startswith(
            ("serving.max_startup_minutes=", "serving.max_startup_minutes:")
        ) and "\n" not in str(err)
        read = None
    assert read == expected
    unset = tmp_path / "unset.yaml"
    unset.write_text("trn2_pools:\n  - name: p\n")
    assert read_deployment_config(str(unset)).max_startup_minutes == (
        load_serving_settings({}).max_startup_minutes
    )
