"""The speculative arm of a calibration deployment (`serving.calibration`) and how long one
calibration can hold it: what the workload builders render (infra/serving/manifests/calibration.py)
and what `plan-deploy` prices (trnspec.plan.idle_cost) read from here.

The arm is a Deployment beside the main one whose ScaledObject holds CALIBRATION_ARM_REPLICAS
while a calibration Job's pod runs and 0 otherwise: at zero load after the calibration it bills
nothing, and while the Job runs it holds one more replica (and the main at least one).

The Job's clock, from its start: its own pod starts (POD_START_SECONDS at most); its runner waits
for both arms (`ready_wait_minutes`: KEDA's poll that starts the arm, the arm pod's start, then
the arm's startup probe budget), then measures (`serving.calibration.deadline_minutes`). The
Job's activeDeadlineSeconds is the sum (`job_deadline_for_wait`), so neither the wait nor the
measurement is cut by the Job.

Constants and arithmetic only (and the pod contract's constants): infra imports this module at
synth time.
"""

import math

from trnspec.config.pod_contract import STAGING_WAIT_SECONDS

#: Replicas of the arm's Deployment while the calibration Job runs.
CALIBRATION_ARM_REPLICAS = 1
#: Seconds between KEDA's counts of the Job's pods (the arm's ScaledObject pollingInterval).
ARM_POLLING_SECONDS = 30
#: Seconds after the Job's pod ends before KEDA takes the arm to 0 replicas (cooldownPeriod).
ARM_COOLDOWN_SECONDS = 300
#: The longest a pod of the calibration (the Job's own, or an arm's) takes from creation to its
#: container's start when its Trn2 node is not up yet: the cold start's node (3-6 min) and image
#: (2-5 min) steps (docs/platform.md, "Cold start, step by step"), rounded up to 15 min. An
#: estimate from the sizes involved, not a measurement.
POD_START_SECONDS = 15 * 60
#: The serving pods' startup probe period (infra/serving/manifests/server.py renders it; the
#: manifests' own Job reads the rendered probe, `plan-deploy` prices from this).
STARTUP_PERIOD_SECONDS = 30


def startup_probe_seconds(startup_minutes: int) -> int:
    """A serving pod's startup probe budget (failureThreshold x periodSeconds) as the Deployment
    renders it for `serving.max_startup_minutes`: the engine's waits for weights
    (STAGING_WAIT_SECONDS), then staging, load and compile, in whole probe periods."""
    budget = math.ceil(STAGING_WAIT_SECONDS) + startup_minutes * 60
    return math.ceil(budget / STARTUP_PERIOD_SECONDS) * STARTUP_PERIOD_SECONDS


def ready_wait_minutes(arm_startup_probe_s: int) -> int:
    """How long the Job's runner waits for both arms to answer (`--wait-ready-minutes`): KEDA's
    poll that starts the arm (it counts the Job's pod), the arm pod's start on its node, then the
    longer arm's startup probe budget (initialDelaySeconds + failureThreshold x periodSeconds);
    whole minutes, rounded up."""
    return math.ceil((ARM_POLLING_SECONDS + POD_START_SECONDS + arm_startup_probe_s) / 60)


def job_deadline_for_wait(wait_minutes: int, deadline_minutes: int) -> int:
    """The Job's activeDeadlineSeconds: its own pod's start, the runner's wait for the arms, then
    the measurement's deadline (`serving.calibration.deadline_minutes`)."""
    return POD_START_SECONDS + (wait_minutes + deadline_minutes) * 60


def job_deadline_seconds(startup_minutes: int, deadline_minutes: int) -> int:
    """The Job's activeDeadlineSeconds for arms started with `serving.max_startup_minutes`
    (what `plan-deploy` bounds a calibration's bill with; the manifests render the same from the
    arms' rendered probes)."""
    wait = ready_wait_minutes(startup_probe_seconds(startup_minutes))
    return job_deadline_for_wait(wait, deadline_minutes)
