"""The in-cluster Prometheus add-on (kube-prometheus-stack; `install.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.prometheus.install import ADDON

__all__ = ["ADDON"]
