"""How long what the load no longer needs stays (and bills): the serving Deployment's last
replica when it scales to zero, and a Trn2 node left empty.

The serving ScaledObject (infra/serving/manifests/autoscaling.py), Karpenter's NodePools
(disruption.consolidateAfter, infra/platform/addons/karpenter) and the Cluster Autoscaler
(--scale-down-unneeded-time, infra/platform/addons/cluster_autoscaler) render these, and
`plan-deploy` (trnspec.plan.idle_cost) counts them in what it says a deployment bills.

Constants only, no imports: infra imports this module at synth time.
"""

#: Seconds between KEDA's reads of the serving ScaledObject's triggers (pollingInterval).
SERVING_POLLING_SECONDS = 15
#: Seconds KEDA waits after the last trigger goes quiet before it takes the serving Deployment
#: from one replica to zero (cooldownPeriod; used only with serving.scale_to_zero): a Trn2 pod
#: is expensive to bring back.
SCALE_TO_ZERO_COOLDOWN_SECONDS = 1800
#: Minutes a node stays after its last serving pod leaves, before the autoscaler removes it
#: (a pod rescheduled meanwhile finds its node and its cached image).
EMPTY_NODE_REMOVAL_MINUTES = 15
