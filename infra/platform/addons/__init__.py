"""Cluster-wide controllers the platform installs, one folder per add-on.

Each folder (as cdk-eks-blueprints' lib/addons/<name>/) holds the add-on's construct and its
`ADDON` declaration (`install.py`: when a profile installs it, the function that builds it, its
relations to the others) and, for a controller that calls AWS, its IAM policy (`iam.py`).
`registry.py` lists them in build order: it picks a profile's set and checks it against every
declaration, and the platform stack builds that set by iterating it. `controller.py` installs a
controller's chart with its Pod Identity role (one helper); `statements.py` writes the IAM
statements of every `iam.py`; every chart and image pin lives in `pins.py` (one table, with the
Kubernetes minors each supports and where that comes from).
"""
