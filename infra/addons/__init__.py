"""Cluster-wide controllers the platform installs, one module per add-on.

Every chart and image pin lives in `pins` (one table, with the Kubernetes minors each supports and
where that comes from); `node_contract` holds what a Trn2 node looks like to a pod (taint, device
resources, scheduler name), which the workload imports. The Neuron, Cluster Autoscaler and
Karpenter constructs are still `infra/neuron.py`, `infra/cluster_autoscaler.py` and
`infra/karpenter.py` (other branches edit them; they read their pins from here).
"""
