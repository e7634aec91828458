"""What a planned deployment costs at zero load, in the two modes it can rest in, and what a
calibration holds while it runs.

- min_replicas as planned: the autoscaler keeps the plan's min_replicas, so their nodes stay up;
- scale to zero (`serving.scale_to_zero: true`): the main Deployment goes to 0 replicas;
- while a calibration plan's Job runs: at least one plain replica and the speculative arm's
  replicas (trnspec.config.calibration_arm), which go to 0 when the Job ends, so neither idle
  mode counts the arm.

Nodes are whole nodes of the variants' instance type: replicas of one replicas-per-node share
nodes (ceil(replicas / per node)); the arm with another replicas-per-node than the main variant
is counted on nodes of its own, an upper bound (packing two pod sizes together is not
modelled). Each node is billed at the price the plan used
(trnspec.hardware.pricing, or --price-per-hour), per hour and per 30-day month. The plan prices
the Trn2 nodes only: what the cluster keeps besides them is named, never given a figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trnspec.config.calibration_arm import CALIBRATION_ARM_REPLICAS
from trnspec.plan.deploy_plan import Variant

#: Hours in the month the monthly figure is for (30 days).
HOURS_PER_MONTH = 30 * 24
#: What stays billed at zero load that the plan has no price for.
NOT_PRICED = (
    "the EKS control plane, the system node group, NAT gateway(s), load balancers and storage"
    " are not priced by the plan"
)


@dataclass(frozen=True)
class IdleMode:
    """The nodes one mode keeps at zero load and what they bill."""

    mode: str
    serving_replicas: int
    arm_replicas: int
    nodes: int
    #: False when `nodes` is an upper bound (the arm counted on nodes of its own).
    exact: bool
    instance_type: str
    usd_per_hour: float

    @property
    def usd_per_month(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH

    def holds(self) -> str:
        """What runs, where, and its hourly bill."""
        arm = f" + {self.arm_replicas} calibration-arm replica(s)" if self.arm_replicas else ""
        bound = "" if self.exact else "at most "
        where = f"{bound}{self.nodes} node(s) of {self.instance_type}" if self.nodes else "0 nodes"
        return f"{self.serving_replicas} replica(s){arm} on {where} = ${self.usd_per_hour:,.2f}/h"

    def describe(self) -> str:
        return f"idle, {self.mode}: {self.holds()}, ${self.usd_per_month:,.2f} per 30-day month"

    def record(self) -> dict[str, Any]:
        return {
            "serving_replicas": self.serving_replicas,
            "calibration_arm_replicas": self.arm_replicas,
            "nodes": self.nodes,
            "nodes_exact": self.exact,
            "instance_type": self.instance_type,
            "usd_per_hour": round(self.usd_per_hour, 2),
            "usd_per_30_day_month": round(self.usd_per_month, 2),
        }


@dataclass(frozen=True)
class IdleCost:
    """The zero-load cost of a plan with min_replicas kept, and with scale to zero; and for a
    calibration plan, what runs while its Job does."""

    min_replicas: IdleMode
    scale_to_zero: IdleMode
    #: While the calibration Job runs (None: the plan is no calibration).
    calibrating: IdleMode | None = None
    #: Whether the deployment config scales to zero (None: no config given, both modes open).
    config_scales_to_zero: bool | None = None
    not_priced: str = NOT_PRICED

    def _mark(self, scales_to_zero: bool) -> str:
        return " <- the config's mode" if self.config_scales_to_zero is scales_to_zero else ""

    def lines(self) -> list[str]:
        lines = [
            f"{self.min_replicas.describe()}{self._mark(False)}",
            f"{self.scale_to_zero.describe()}{self._mark(True)}; {self.not_priced}",
        ]
        if self.calibrating is not None:
            lines.append(
                f"{self.calibrating.mode}: {self.calibrating.holds()} (the arm goes to 0"
                " replicas when the Job ends: neither idle figure counts it)"
            )
        return lines

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "min_replicas": self.min_replicas.record(),
            "scale_to_zero": self.scale_to_zero.record(),
            "not_priced": self.not_priced,
        }
        if self.calibrating is not None:
            out["calibrating"] = self.calibrating.record()
        if self.config_scales_to_zero is not None:
            out["config_mode"] = "scale_to_zero" if self.config_scales_to_zero else "min_replicas"
        return out


def _mode(mode: str, serving: Variant, replicas: int, arm: Variant | None) -> IdleMode:
    arm_replicas = CALIBRATION_ARM_REPLICAS if arm is not None else 0
    main_nodes = math.ceil(replicas / serving.replicas_per_node)
    cost = main_nodes * serving.price_per_hour_usd
    if arm is None:
        nodes, exact = main_nodes, True
    elif (arm.instance_type, arm.replicas_per_node) == (
        serving.instance_type,
        serving.replicas_per_node,
    ):
        nodes, exact = math.ceil((replicas + arm_replicas) / serving.replicas_per_node), True
        cost = nodes * serving.price_per_hour_usd
    else:
        arm_nodes = math.ceil(arm_replicas / arm.replicas_per_node)
        nodes = main_nodes + arm_nodes
        exact = arm.instance_type != serving.instance_type
        cost += arm_nodes * arm.price_per_hour_usd
    itype = serving.instance_type
    if arm is not None and arm.instance_type != itype:
        itype = f"{itype} and {arm.instance_type}"
    return IdleMode(mode, replicas, arm_replicas, nodes, exact, itype, cost)


def idle_cost(
    serving: Variant,
    arm: Variant | None,
    min_replicas: int,
    config_scales_to_zero: bool | None = None,
) -> IdleCost:
    """The zero-load cost of deploying `serving` with `min_replicas`, and with a calibration's
    speculative `arm` (None: no calibration) what its Job holds while it runs; the mode a
    deployment config rests in is marked when one is given."""
    calibrating = None
    if arm is not None:
        held = max(1, min_replicas)
        calibrating = _mode("while the calibration Job runs", serving, held, arm)
    return IdleCost(
        _mode(f"min_replicas {min_replicas} as planned", serving, min_replicas, None),
        _mode("scale to zero (serving.scale_to_zero: true)", serving, 0, None),
        calibrating,
        config_scales_to_zero,
    )
