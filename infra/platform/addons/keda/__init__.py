"""The KEDA add-on: operator, CRDs and external-metrics API server that turn the workload's
ScaledObject into an HPA (`install.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.keda.install import ADDON

__all__ = ["ADDON"]
