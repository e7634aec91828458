"""The ramp from the autoscaler's floor to the replicas at peak, under its scale-up policy, and
what queueing on the way does to the first token.

Time to peak: the scale-up policy adds `pods` replicas every `period_s` (KEDA's HPA behaviour,
the serving manifest's scaleUp policy), so reaching R replicas from a floor m takes
ceil((R - m) / pods) periods, plus the start of the last pod (node, weights, compile cache:
`pod_start_s`, when known). The deployed policy is trnspec.config.scale_up's, the one the
ScaledObject renders: ceil((max_replicas - floor) / RAMP_STEPS) pods per SCALE_UP_PERIOD_SECONDS,
with the floor min_replicas (0 with `serving.scale_to_zero`) and the plan's replicas at peak as
max_replicas (`deployed_policy`).

Scale to zero: at a floor of 0 no replica is up when the load comes, so the first request waits
for a new pod's start (node, weights, compile cache) before any token; that wait is counted
when the pod start is known and named as uncounted when it is not.

Queueing: with the peak's streams arriving at once and each replica decoding at most b of them,
the streams beyond the running slots wait; in a closed loop they share the slots, so a request
waits about (streams / slots - 1) x output_len x TPOT for its first token while the slots are
fewest (at the start of the ramp). TPOT itself holds: no replica runs more than b streams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trnspec.config.scale_up import SCALE_UP_PERIOD_SECONDS, scale_up_rate

#: The period of the deployed scale-up policy (trnspec.config.scale_up); its pods per period
#: depend on the floor and the plan's replicas at peak (`deployed_policy`).
DEFAULT_SCALE_UP_PERIOD_S = SCALE_UP_PERIOD_SECONDS


@dataclass(frozen=True)
class ScaleUpPolicy:
    pods: int
    period_s: int = DEFAULT_SCALE_UP_PERIOD_S
    #: Seconds from a pod's creation to Ready (None: not known, not counted).
    pod_start_s: float | None = None


def deployed_policy(
    floor: int, peak_replicas: int, pod_start_s: float | None = None
) -> ScaleUpPolicy:
    """The policy the serving ScaledObject renders for a plan: its floor is the plan's
    min_replicas, or 0 with scale to zero (trnspec.config.scale_up.scale_up_floor), its
    max_replicas the replicas at peak (trnspec.plan.document)."""
    rate = scale_up_rate(floor, peak_replicas)
    return ScaleUpPolicy(rate.pods, rate.period_s, pod_start_s)


@dataclass(frozen=True)
class Ramp:
    """The ramp of one plan and the first-token wait at its start."""

    #: The replicas the autoscaler rests at: min_replicas, or 0 with scale to zero.
    floor: int
    peak_replicas: int
    steps: int
    #: Seconds of scale-up steps, and with the last pod's start when known.
    scale_up_s: float
    to_peak_s: float | None
    #: Streams waiting for a slot once the first replicas are up.
    queued_streams: int
    #: First-token wait of a queued request once the first replicas are up (0: nothing queues).
    queue_wait_s: float
    ttft_target_ms: float | None
    #: The scale-up policy the ramp was timed with.
    policy: ScaleUpPolicy
    #: Seconds a request at zero replicas waits for a new pod (0 with a floor of at least one
    #: replica; None at a floor of 0 when the pod start is not known).
    cold_start_s: float | None = 0.0

    @property
    def from_zero(self) -> bool:
        return self.floor == 0

    @property
    def breaks_ttft(self) -> bool:
        """The first token waits longer than the target (an unknown cold start counts only when
        it is known)."""
        if self.ttft_target_ms is None:
            return False
        wait_s = self.queue_wait_s + (self.cold_start_s or 0.0)
        return wait_s * 1e3 > self.ttft_target_ms

    def describe(self) -> list[str]:
        policy = self.policy
        rate = f"{policy.pods} pod(s) per {policy.period_s:g} s"
        if self.steps == 0:
            return [f"ramp: none (min_replicas {self.floor} covers the peak)"]
        start = (
            f" + {policy.pod_start_s / 60:.0f} min pod start = {self.to_peak_s / 60:.0f} min"
            if self.to_peak_s is not None
            else " + each pod's start (not counted: give --pod-start-minutes)"
        )
        lines = [
            f"ramp: {self.floor} -> {self.peak_replicas} replicas in {self.steps}"
            f" step(s) at {rate}: {self.scale_up_s / 60:.0f} min{start}"
        ]
        if self.from_zero:
            lines.append(self._cold_line())
        if self.queued_streams:
            lines.append(self._queue_line())
        return lines

    def _cold_line(self) -> str:
        # what the client meets meanwhile: the wake path (serving.wake, infra/settings/wake.py)
        held = "; the wake path holds it, then answers 503 + Retry-After (serving.wake)"
        wait = "scale to zero: a request at zero replicas waits for a new pod's start"
        if self.cold_start_s is None:
            return (
                f"ramp: {wait} (node, weights, compile cache) before its first token"
                f" (not counted: give --pod-start-minutes){held}"
            )
        wait += f": first token about {self.cold_start_s / 60:.0f} min later"
        if self.ttft_target_ms is not None and self.cold_start_s * 1e3 > self.ttft_target_ms:
            return (
                f"WARNING: {wait}, above the {self.ttft_target_ms:g} ms TTFT target: set"
                f" serving.scale_to_zero: false to keep min_replicas, or accept the wait{held}"
            )
        return f"ramp: {wait}{held}"

    def _queue_line(self) -> str:
        first = "once the first replica is up" if self.from_zero else "at the start"
        wait = (
            f"{self.queued_streams} streams wait for a slot {first}: first token"
            f" about {self.queue_wait_s:.0f} s later"
        )
        if self.ttft_target_ms is None:
            return f"ramp: {wait} (no --ttft-ms target given)"
        if self.queue_wait_s * 1e3 > self.ttft_target_ms:
            return (
                f"WARNING: {wait}, above the {self.ttft_target_ms:g} ms TTFT target: raise"
                " min_replicas, scale up faster, or accept the wait"
            )
        return f"ramp: {wait}, within the TTFT target"


def ramp(
    floor: int,
    peak_replicas: int,
    max_num_seqs: int,
    peak_streams: int,
    tpot_ms: float,
    output_len: int,
    policy: ScaleUpPolicy,
    ttft_target_ms: float | None = None,
) -> Ramp:
    """The ramp of a plan from the autoscaler's `floor` (min_replicas, or 0 with scale to zero;
    see the module doc)."""
    steps = max(0, math.ceil((peak_replicas - floor) / policy.pods))
    scale_up_s = steps * policy.period_s
    to_peak = scale_up_s + policy.pod_start_s if policy.pod_start_s is not None else None
    cold = policy.pod_start_s if floor == 0 else 0.0
    slots = max(1, floor) * max_num_seqs
    queued = max(0, peak_streams - slots)
    wait = (peak_streams / slots - 1.0) * output_len * tpot_ms / 1e3 if queued else 0.0
    return Ramp(
        floor, peak_replicas, steps, scale_up_s, to_peak, queued, wait, ttft_target_ms, policy, cold
    )
