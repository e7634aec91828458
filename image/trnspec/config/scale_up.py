"""The autoscaler's scale-up policy: how many serving pods the HPA may add per period.

The KEDA ScaledObject (infra/serving/manifests/autoscaling.py) renders it and `trnspec
plan-deploy` (trnspec.plan.ramp) times the ramp to peak with it, so the ramp a plan prints is
the one the deployment runs. The peak's replicas are asked for within RAMP_STEPS periods of
SCALE_UP_PERIOD_SECONDS: each replica then needs its node and its load (tens of minutes, the
same for all of them, in parallel); adding them one by one every 5 minutes took 75 minutes to
reach 16 while requests queued behind one replica.

Pure arithmetic, no imports beyond the standard library: infra imports it at synth time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Seconds per scale-up period of the HPA's Pods policy.
SCALE_UP_PERIOD_SECONDS = 60
#: Periods in which the policy may go from the floor to max_replicas.
RAMP_STEPS = 3


@dataclass(frozen=True)
class ScaleUpRate:
    """Pods the HPA may add per period of `period_s` seconds."""

    pods: int
    period_s: int

    def periods(self, floor: int, max_replicas: int) -> int:
        """Periods from `floor` replicas to `max_replicas` when the load asks for all at once."""
        return max(0, math.ceil((max_replicas - floor) / self.pods))


def scale_up_floor(min_replicas: int, scale_to_zero: bool) -> int:
    """The replicas the autoscaler rests at: 0 with scale to zero, else min_replicas."""
    return 0 if scale_to_zero else min_replicas


def scale_up_rate(floor: int, max_replicas: int) -> ScaleUpRate:
    """The policy that reaches `max_replicas` from `floor` within RAMP_STEPS periods (at least
    one pod per period). The in-flight metric already says how many replicas the load needs, so
    this bounds the rate, not the count."""
    pods = max(1, math.ceil((max_replicas - floor) / RAMP_STEPS))
    return ScaleUpRate(pods, SCALE_UP_PERIOD_SECONDS)


def time_to_peak_seconds(floor: int, max_replicas: int) -> int:
    """How long the policy takes to ask for `max_replicas` from `floor` (node launch and model
    load come on top, in parallel for every new replica)."""
    rate = scale_up_rate(floor, max_replicas)
    return rate.periods(floor, max_replicas) * rate.period_s
