"""Cluster-wide controllers the platform installs, one module per add-on.

Each module declares one `ADDON` (`addon.py`): when a profile installs it, the function that
builds it, and its relations to the others (requires, excludes). `registry.py` lists them in
build order: it picks a profile's set and checks it against every declaration, and the platform
stack builds that set by iterating it. Each add-on's IAM statements live in `iam/<add-on>.py`;
every chart and image pin lives in `pins` (one table, with the Kubernetes minors each supports
and where that comes from).
"""
