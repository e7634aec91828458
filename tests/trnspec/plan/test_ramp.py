"""The ramp to peak replicas under the scale-up policy, and the first-token wait of the streams
that queue while it runs (trnspec.plan.ramp)."""

from __future__ import annotations

import pytest
from trnspec.plan.ramp import ScaleUpPolicy, deployed_policy, ramp


def test_one_pod_per_five_minutes_takes_seventy_five_minutes_from_one_to_sixteen() -> None:
    r = ramp(1, 16, 1, 16, 10.0, 256, ScaleUpPolicy(1, 300))
    assert (r.steps, r.scale_up_s, r.to_peak_s) == (15, 4500, None)
    assert "75 min" in r.describe()[0]


def test_a_faster_policy_and_a_known_pod_start_give_the_time_to_peak() -> None:
    policy = ScaleUpPolicy(4, 60, pod_start_s=600)
    r = ramp(1, 16, 1, 16, 10.0, 256, policy)
    assert (r.steps, r.to_peak_s) == (4, 4 * 60 + 600)


def test_the_deployed_policy_asks_for_the_peak_within_three_minutes() -> None:
    # the ScaledObject's scaleUp: ceil((max_replicas - min_replicas) / 3) pods per 60 s (pinned
    # to the rendered object in tests/infra/serving/manifests/test_autoscaling_plan_ramp.py)
    assert deployed_policy(1, 16) == ScaleUpPolicy(5, 60)
    assert deployed_policy(4, 5) == ScaleUpPolicy(1, 60)
    r = ramp(1, 16, 1, 16, 10.0, 256, deployed_policy(1, 16))
    assert (r.steps, r.scale_up_s) == (3, 180)
    assert "in 3 step(s) at 5 pod(s) per 60 s: 3 min" in r.describe()[0]


def test_streams_beyond_the_first_replicas_slots_share_them_and_wait() -> None:
    # 16 streams on 1 replica of batch 4: 12 wait; each waits ~(16/4 - 1) requests of 256 tokens
    policy = deployed_policy(1, 4)
    r = ramp(1, 4, 4, 16, 20.0, 256, policy, ttft_target_ms=5000)
    assert r.queued_streams == 12
    assert r.queue_wait_s == pytest.approx(3 * 256 * 0.020)
    assert r.breaks_ttft and "WARNING" in r.describe()[-1]


def test_nothing_queues_when_min_replicas_cover_the_peak() -> None:
    r = ramp(4, 4, 4, 16, 20.0, 256, deployed_policy(4, 4), ttft_target_ms=100)
    assert (r.steps, r.queued_streams, r.queue_wait_s, r.breaks_ttft) == (0, 0, 0.0, False)


def test_from_zero_the_ramp_counts_every_replica_and_the_first_request_waits_a_pod_start() -> None:
    # scale to zero: the floor is 0, so the policy adds ceil(4 / 3) = 2 pods per period and the
    # peak's 4 replicas take 2 periods; nothing serves until the first pod is up
    policy = deployed_policy(0, 4, pod_start_s=900)
    assert policy == ScaleUpPolicy(2, 60, 900)
    r = ramp(0, 4, 4, 16, 20.0, 256, policy, ttft_target_ms=5000)
    assert (r.floor, r.steps, r.scale_up_s, r.to_peak_s) == (0, 2, 120, 120 + 900)
    assert r.cold_start_s == 900
    lines = r.describe()
    assert lines[0].startswith("ramp: 0 -> 4 replicas in 2 step(s) at 2 pod(s) per 60 s")
    assert "first token about 15 min later, above the 5000 ms TTFT target" in lines[1]
    assert lines[1].startswith("WARNING:") and "serving.scale_to_zero: false" in lines[1]
    assert r.breaks_ttft


def test_from_zero_an_unknown_pod_start_is_named_as_not_counted() -> None:
    policy = deployed_policy(0, 2)
    r = ramp(0, 2, 8, 8, 20.0, 256, policy, ttft_target_ms=5000)
    assert r.cold_start_s is None and r.queued_streams == 0
    (first, cold) = r.describe()
    assert first.startswith("ramp: 0 -> 2 replicas in 2 step(s)")
    assert "waits for a new pod's start" in cold and "not counted: give --pod-start-minutes" in cold
    assert not r.breaks_ttft


def test_a_cold_start_within_the_target_is_no_warning_and_a_floor_of_one_has_none() -> None:
    policy = deployed_policy(0, 2, pod_start_s=60)
    cold = ramp(0, 2, 8, 8, 20.0, 256, policy, ttft_target_ms=120_000).describe()[1]
    assert (
        cold == "ramp: scale to zero: a request at zero replicas waits for a new pod's start:"
        " first token about 1 min later; the wake path holds it, then answers 503 +"
        " Retry-After (serving.wake)"
    )
    at_one = deployed_policy(1, 2, pod_start_s=60)
    warm = ramp(1, 2, 8, 8, 20.0, 256, at_one, ttft_target_ms=1)
    assert warm.cold_start_s == 0 and not warm.breaks_ttft
    assert not any("zero replicas" in line for line in warm.describe())
