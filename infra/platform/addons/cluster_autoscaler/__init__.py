"""The Cluster Autoscaler add-on: the chart and the node-template tags that let it scale
Trn2 groups from zero (`install.py`), and its IAM policy (`iam.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.cluster_autoscaler.install import ADDON

__all__ = ["ADDON"]
