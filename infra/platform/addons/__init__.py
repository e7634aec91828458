"""Cluster-wide controllers the platform installs, one module per add-on.

Each module declares its relations to the others (`ADDON`: requires, excludes, checked at synth
by `selection.addon_problems`); every chart and image pin lives in `pins` (one table, with the
Kubernetes minors each supports and where that comes from); `node_contract` holds what a Trn2 node
looks like to a pod (taint, device resources, scheduler name), which the workload imports.
"""
