"""What a plan costs at zero load, kept at min_replicas and scaled to zero: whole nodes at the
plan's price, a calibration's arm only while its Job runs, and what the plan does not price named
(trnspec.plan.idle_cost)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from trnspec.config.calibration_arm import CALIBRATION_ARM_REPLICAS
from trnspec.plan.deploy_plan import Variant
from trnspec.plan.idle_cost import HOURS_PER_MONTH, IdleCost, IdleMode, idle_cost

PLAIN = Variant(
    profile="plain",
    speculative=False,
    k=0,
    max_num_seqs=1,
    overrides=(),
    tpot_ms=10.0,
    tokens_per_s_per_replica=100.0,
    min_speedup=1.0,
    replicas_per_node=4,
    packing_reason="chips",
    replicas_at_peak=16,
    nodes_at_peak=4,
    price_per_hour_usd=10.0,
    cost_per_1m_output_tokens_usd=1.0,
    idle_nodes=1,
    idle_cost_per_hour_usd=10.0,
    instance_type="trn2.48xlarge",
)
ARM = replace(PLAIN, profile="spec", speculative=True, k=15)


def _held(idle: IdleCost) -> IdleMode:
    assert idle.calibrating is not None
    return idle.calibrating.held


def test_min_replicas_keep_their_whole_nodes_and_scale_to_zero_keeps_none() -> None:
    idle = idle_cost(PLAIN, None, 5)  # 5 replicas at 4 per node: 2 nodes
    kept, zero = idle.min_replicas, idle.scale_to_zero
    assert (kept.nodes, kept.usd_per_hour) == (2, 20.0)
    assert kept.usd_per_month == pytest.approx(20.0 * 24 * 30) and HOURS_PER_MONTH == 720
    assert (zero.serving_replicas, zero.nodes, zero.usd_per_hour) == (0, 0, 0.0)
    first, second = idle.lines()
    assert "min_replicas 5" in first and "$20.00/h, $14,400.00 per 30-day month" in first
    assert "0 nodes = $0.00/h" in second
    assert "EKS control plane" in second and "not priced by the plan" in second


def test_a_calibrations_arm_is_billed_while_its_job_runs_and_at_no_idle() -> None:
    idle = idle_cost(PLAIN, ARM, 1)
    assert idle.scale_to_zero.arm_replicas == idle.min_replicas.arm_replicas == 0
    assert idle.scale_to_zero.usd_per_hour == 0.0 and idle.min_replicas.usd_per_hour == 10.0
    assert idle.calibrating is not None
    running = idle.calibrating.held
    assert (running.serving_replicas, running.arm_replicas) == (1, CALIBRATION_ARM_REPLICAS)
    assert "calibration-arm" in idle.lines()[2] and "goes to 0 replicas" in idle.lines()[2]
    # the arm shares the main replicas' nodes: a full node of them puts it on another
    assert _held(idle_cost(PLAIN, ARM, 4)) == replace(
        running, serving_replicas=4, nodes=2, usd_per_hour=20.0
    )
    # scale to zero (min_replicas 0 in the ramp): the Job still holds one plain replica
    assert _held(idle_cost(PLAIN, ARM, 0)) == running
    assert (
        idle_cost(PLAIN, None, 1).calibrating is None
        and len(idle_cost(PLAIN, None, 1).lines()) == 2
    )


def test_an_arm_of_another_size_is_counted_on_nodes_of_its_own_as_an_upper_bound() -> None:
    running = _held(idle_cost(PLAIN, replace(ARM, replicas_per_node=2), 1))
    assert (running.nodes, running.exact) == (2, False)
    assert "at most 2 node(s)" in running.holds()


def test_the_record_carries_the_figures_printed() -> None:
    record = idle_cost(PLAIN, ARM, 1).record()
    assert record["min_replicas"]["usd_per_hour"] == 10.0
    assert record["scale_to_zero"]["usd_per_30_day_month"] == 0.0
    assert record["calibrating"]["calibration_arm_replicas"] == CALIBRATION_ARM_REPLICAS
    assert record["calibrating"]["usd_per_hour"] == 10.0
    assert "EKS control plane" in record["not_priced"]
    assert "calibrating" not in idle_cost(PLAIN, None, 1).record()


def test_the_mode_a_deployment_config_rests_in_is_marked() -> None:
    assert not any("config's mode" in line for line in idle_cost(PLAIN, None, 1).lines())
    assert "config_mode" not in idle_cost(PLAIN, None, 1).record()
    for scales, marked in ((True, 1), (False, 0)):
        idle = idle_cost(PLAIN, None, 1, config_scales_to_zero=scales)
        assert [i for i, line in enumerate(idle.lines()) if "<- the config's mode" in line] == [
            marked
        ]
        assert idle.record()["config_mode"] == ("scale_to_zero" if scales else "min_replicas")


def test_a_calibration_is_priced_over_its_bounded_run_not_by_the_month() -> None:
    """The Job is bounded (the startup budget, then its deadline), so what it holds bills at
    most the hourly price over that bound and the release after it; a monthly figure would
    price a run that cannot last a month (tests/infra/.../test_calibration_bill_bound.py holds
    the bound to what the deployment renders)."""
    held = idle_cost(PLAIN, ARM, 1, config_scales_to_zero=False, startup_minutes=90).calibrating
    assert held is not None
    record = idle_cost(PLAIN, ARM, 1, False, 90).record()["calibrating"]
    assert "usd_per_30_day_month" not in record
    assert record["usd_at_most"] == round(10.0 * held.at_most_s / 3600, 2)
    assert record["at_most_minutes"] == math.ceil(held.at_most_s / 60)
    # each minute more of startup budget is a minute more of the bound
    longer = idle_cost(PLAIN, ARM, 1, False, 91).calibrating
    assert longer is not None and longer.at_most_s - held.at_most_s == 60
    # the main replica the Job kept up lets go later with scale to zero; unknown: the longer
    zero = idle_cost(PLAIN, ARM, 1, True, 90).calibrating
    unknown = idle_cost(PLAIN, ARM, 1, None, 90).calibrating
    assert zero is not None and unknown is not None
    assert zero.at_most_s > held.at_most_s and unknown.at_most_s == zero.at_most_s
    line = idle_cost(PLAIN, ARM, 1, False, 90).lines()[2]
    assert f"= at most ${held.usd_at_most:,.2f}" in line and "startup budget 90 min" in line
