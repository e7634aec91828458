"""The speculative arm of a calibration deployment (`serving.calibration`): what the workload
builders render (infra/serving/manifests/calibration.py) and what `plan-deploy` prices
(trnspec.plan.idle_cost) read its replicas from here.

The arm is a Deployment beside the main one whose ScaledObject holds CALIBRATION_ARM_REPLICAS
while a calibration Job's pod runs and 0 otherwise: at zero load after the calibration it bills
nothing, and while the Job runs it holds one more replica (and the main at least one).
"""

#: Replicas of the arm's Deployment while the calibration Job runs.
CALIBRATION_ARM_REPLICAS = 1
