"""What a planned deployment costs at zero load, in the two modes it can rest in, and what a
calibration holds while it runs and bills at most.

- min_replicas as planned: the autoscaler keeps the plan's min_replicas, so their nodes stay up;
- scale to zero (`serving.scale_to_zero: true`): the main Deployment goes to 0 replicas, KEDA's
  cooldown after the last request, and its nodes go once the autoscaler finds them empty
  (trnspec.config.scale_down);
- while a calibration plan's Job runs: at least one plain replica and the speculative arm's
  replicas (trnspec.config.calibration_arm), which go to 0 when the Job ends, so neither idle
  mode counts the arm. The Job is bounded (the startup budget plus its deadline), so what it
  holds is priced over that bound and the tails after it, an upper bound of its bill.

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

from trnspec.config.calibration_arm import (
    ARM_COOLDOWN_SECONDS,
    ARM_POLLING_SECONDS,
    CALIBRATION_ARM_REPLICAS,
    job_deadline_seconds,
)
from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES
from trnspec.config.scale_down import (
    EMPTY_NODE_REMOVAL_MINUTES,
    SCALE_TO_ZERO_COOLDOWN_SECONDS,
    SERVING_POLLING_SECONDS,
)
from trnspec.plan.deploy_plan import Variant
from trnspec.plan.document import CALIBRATION_DEADLINE_MINUTES

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

    def held(self) -> dict[str, Any]:
        """What `holds` says, as the plan records it."""
        return {
            "serving_replicas": self.serving_replicas,
            "calibration_arm_replicas": self.arm_replicas,
            "nodes": self.nodes,
            "nodes_exact": self.exact,
            "instance_type": self.instance_type,
            "usd_per_hour": round(self.usd_per_hour, 2),
        }

    def record(self) -> dict[str, Any]:
        return {**self.held(), "usd_per_30_day_month": round(self.usd_per_month, 2)}


@dataclass(frozen=True)
class CalibrationHold:
    """What a calibration's Job holds while it runs, and the longest it can hold it."""

    held: IdleMode
    #: The Job's bound: the startup budget then the measurement's deadline.
    startup_minutes: int
    deadline_minutes: int
    #: The seconds after the Job's pod ends before the last of what it held lets go: the arm's
    #: poll and cooldown, or with scale to zero the main replica's (the longer), then an empty
    #: node's removal.
    tail_s: int

    @property
    def at_most_s(self) -> int:
        return job_deadline_seconds(self.startup_minutes, self.deadline_minutes) + self.tail_s

    @property
    def usd_at_most(self) -> float:
        return self.held.usd_per_hour * self.at_most_s / 3600

    @property
    def at_most_minutes(self) -> int:
        return math.ceil(self.at_most_s / 60)

    def line(self) -> str:
        hours, minutes = divmod(self.at_most_minutes, 60)
        return (
            f"while the calibration Job runs: {self.held.holds()} for at most {hours} h"
            f" {minutes:02d} min (the arms' start on a first deploy: the waits for weights and"
            f" the startup budget {self.startup_minutes} min; the Job's"
            f" deadline {self.deadline_minutes} min, then {math.ceil(self.tail_s / 60)} min"
            f" for the replicas and the empty node to go) = at most ${self.usd_at_most:,.2f};"
            " the arm goes to 0 replicas when the Job ends: neither idle figure counts it"
        )

    def record(self) -> dict[str, Any]:
        return {
            **self.held.held(),
            "startup_minutes": self.startup_minutes,
            "deadline_minutes": self.deadline_minutes,
            "at_most_minutes": self.at_most_minutes,
            "usd_at_most": round(self.usd_at_most, 2),
        }


@dataclass(frozen=True)
class IdleCost:
    """The zero-load cost of a plan with min_replicas kept, and with scale to zero; and for a
    calibration plan, what runs while its Job does."""

    min_replicas: IdleMode
    scale_to_zero: IdleMode
    #: While the calibration Job runs (None: the plan is no calibration).
    calibrating: CalibrationHold | None = None
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
            lines.append(self.calibrating.line())
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


def _tail_seconds(scales_to_zero: bool) -> int:
    """After the Job's pod ends: KEDA's next poll and cooldown for the arm (and with scale to
    zero for the main replica the Job kept up), then the removal of the node left empty."""
    arm = ARM_POLLING_SECONDS + ARM_COOLDOWN_SECONDS
    main = SERVING_POLLING_SECONDS + SCALE_TO_ZERO_COOLDOWN_SECONDS if scales_to_zero else 0
    return max(arm, main) + EMPTY_NODE_REMOVAL_MINUTES * 60


def idle_cost(
    serving: Variant,
    arm: Variant | None,
    min_replicas: int,
    config_scales_to_zero: bool | None = None,
    startup_minutes: int = DEFAULT_MAX_STARTUP_MINUTES,
) -> IdleCost:
    """The zero-load cost of deploying `serving` with `min_replicas`, and with a calibration's
    speculative `arm` (None: no calibration) what its Job holds while it runs and at most bills
    (its bound from `startup_minutes`, the config's serving.max_startup_minutes); the mode a
    deployment config rests in is marked when one is given. Without a config the calibration's
    tail is the longer one, scale to zero's."""
    calibrating = None
    if arm is not None:
        held = _mode("while the calibration Job runs", serving, max(1, min_replicas), arm)
        tail = _tail_seconds(config_scales_to_zero is not False)
        calibrating = CalibrationHold(held, startup_minutes, CALIBRATION_DEADLINE_MINUTES, tail)
    return IdleCost(
        _mode(f"min_replicas {min_replicas} as planned", serving, min_replicas, None),
        _mode(
            "scale to zero (serving.scale_to_zero: true; reached"
            f" {SCALE_TO_ZERO_COOLDOWN_SECONDS // 60} min after the last request, its node(s)"
            f" {EMPTY_NODE_REMOVAL_MINUTES} min later)",
            serving,
            0,
            None,
        ),
        calibrating,
        config_scales_to_zero,
    )
