"""The AWS Load Balancer Controller add-on: the chart (`install.py`) that provisions the
workload's internal NLB, and its IAM policy (`iam.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.aws_load_balancer_controller.install import ADDON

__all__ = ["ADDON"]
