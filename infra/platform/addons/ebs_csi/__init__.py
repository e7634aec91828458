"""The EBS CSI driver add-on: the EKS add-on, its volume key and gp3 StorageClass
(`install.py`), and its IAM policy (`iam.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.ebs_csi.install import ADDON

__all__ = ["ADDON"]
