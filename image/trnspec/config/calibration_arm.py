"""The speculative arm of a calibration deployment (`serving.calibration`): what the workload
builders render (infra/serving/manifests/calibration.py) and what `plan-deploy` prices at idle
(trnspec.plan.idle_cost) read its replicas from here.

The arm is a Deployment beside the main one with no autoscaler: it keeps its replicas at every
load, with scale to zero too, until a plan without a calibration is deployed.
"""

#: Replicas of the arm's Deployment.
CALIBRATION_ARM_REPLICAS = 1
