"""The Karpenter add-on: the controller and its CRDs (`install.py`), one NodePool and
EC2NodeClass per Trn2 pool (`node_pools.py`), and its IAM policy (`iam.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.karpenter.install import ADDON

__all__ = ["ADDON"]
