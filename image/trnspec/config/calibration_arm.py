"""The speculative arm of a calibration deployment (`serving.calibration`) and how long one
calibration can hold it: what the workload builders render (infra/serving/manifests/calibration.py)
and what `plan-deploy` prices (trnspec.plan.idle_cost) read from here.

The arm is a Deployment beside the main one whose ScaledObject holds CALIBRATION_ARM_REPLICAS
while a calibration Job's pod runs and 0 otherwise: at zero load after the calibration it bills
nothing, and while the Job runs it holds one more replica (and the main at least one).

Constants and arithmetic only, no imports: infra imports this module at synth time.
"""

#: Replicas of the arm's Deployment while the calibration Job runs.
CALIBRATION_ARM_REPLICAS = 1
#: Seconds between KEDA's counts of the Job's pods (the arm's ScaledObject pollingInterval).
ARM_POLLING_SECONDS = 30
#: Seconds after the Job's pod ends before KEDA takes the arm to 0 replicas (cooldownPeriod).
ARM_COOLDOWN_SECONDS = 300


def job_deadline_seconds(startup_minutes: int, deadline_minutes: int) -> int:
    """The Job's activeDeadlineSeconds: the arms' startup budget (serving.max_startup_minutes,
    the runner waits for both to be ready), then the measurement's deadline."""
    return (startup_minutes + deadline_minutes) * 60
