"""The ramp from min_replicas to the replicas at peak, under the autoscaler's scale-up policy, and
what queueing on the way does to the first token.

Time to peak: the scale-up policy adds `pods` replicas every `period_s` (KEDA's HPA behaviour,
the serving manifest's scaleUp policy), so reaching R replicas from m takes ceil((R - m) / pods)
periods, plus the start of the last pod (node, weights, compile cache: `pod_start_s`, when
known). The deployed policy is trnspec.config.scale_up's, the one the ScaledObject renders:
ceil((max_replicas - floor) / RAMP_STEPS) pods per SCALE_UP_PERIOD_SECONDS, with the plan's
min_replicas as the floor and its replicas at peak as max_replicas (`deployed_policy`).

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
#: depend on the plan's min_replicas and replicas at peak (`deployed_policy`).
DEFAULT_SCALE_UP_PERIOD_S = SCALE_UP_PERIOD_SECONDS


@dataclass(frozen=True)
class ScaleUpPolicy:
    pods: int
    period_s: int = DEFAULT_SCALE_UP_PERIOD_S
    #: Seconds from a pod's creation to Ready (None: not known, not counted).
    pod_start_s: float | None = None


def deployed_policy(
    min_replicas: int, peak_replicas: int, pod_start_s: float | None = None
) -> ScaleUpPolicy:
    """The policy the serving ScaledObject renders for a plan: its floor is the plan's
    min_replicas, its max_replicas the replicas at peak (trnspec.plan.document)."""
    rate = scale_up_rate(min_replicas, peak_replicas)
    return ScaleUpPolicy(rate.pods, rate.period_s, pod_start_s)


@dataclass(frozen=True)
class Ramp:
    """The ramp of one plan and the first-token wait at its start."""

    min_replicas: int
    peak_replicas: int
    steps: int
    #: Seconds of scale-up steps, and with the last pod's start when known.
    scale_up_s: float
    to_peak_s: float | None
    #: Streams waiting for a slot at the start of the ramp.
    queued_streams: int
    #: First-token wait of a queued request at the start of the ramp (0: nothing queues).
    queue_wait_s: float
    ttft_target_ms: float | None

    @property
    def breaks_ttft(self) -> bool:
        return self.ttft_target_ms is not None and self.queue_wait_s * 1e3 > self.ttft_target_ms

    def describe(self, policy: ScaleUpPolicy) -> list[str]:
        rate = f"{policy.pods} pod(s) per {policy.period_s:g} s"
        if self.steps == 0:
            return [f"ramp: none (min_replicas {self.min_replicas} covers the peak)"]
        start = (
            f" + {policy.pod_start_s / 60:.0f} min pod start = {self.to_peak_s / 60:.0f} min"
            if self.to_peak_s is not None
            else " + each pod's start (not counted: give --pod-start-minutes)"
        )
        lines = [
            f"ramp: {self.min_replicas} -> {self.peak_replicas} replicas in {self.steps}"
            f" step(s) at {rate}: {self.scale_up_s / 60:.0f} min{start}"
        ]
        if self.queued_streams:
            wait = (
                f"{self.queued_streams} streams wait for a slot at the start: first token"
                f" about {self.queue_wait_s:.0f} s later"
            )
            if self.ttft_target_ms is None:
                lines.append(f"ramp: {wait} (no --ttft-ms target given)")
            elif self.breaks_ttft:
                lines.append(
                    f"WARNING: {wait}, above the {self.ttft_target_ms:g} ms TTFT target: raise"
                    " min_replicas, scale up faster, or accept the wait"
                )
            else:
                lines.append(f"ramp: {wait}, within the TTFT target")
        return lines


def ramp(
    min_replicas: int,
    peak_replicas: int,
    max_num_seqs: int,
    peak_streams: int,
    tpot_ms: float,
    output_len: int,
    policy: ScaleUpPolicy,
    ttft_target_ms: float | None = None,
) -> Ramp:
    """The ramp of a plan (see the module doc)."""
    start = max(1, min_replicas)
    steps = max(0, math.ceil((peak_replicas - start) / policy.pods))
    scale_up_s = steps * policy.period_s
    to_peak = scale_up_s + policy.pod_start_s if policy.pod_start_s is not None else None
    slots = start * max_num_seqs
    queued = max(0, peak_streams - slots)
    wait = (peak_streams / slots - 1.0) * output_len * tpot_ms / 1e3 if queued else 0.0
    return Ramp(
        min_replicas, peak_replicas, steps, scale_up_s, to_peak, queued, wait, ttft_target_ms
    )
