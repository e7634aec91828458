"""The KEDA HTTP add-on: the interceptor proxy, external scaler and operator that wake a workload
which scales to zero when a request arrives (`install.py`), and the NetworkPolicy that keeps the
interceptor's proxy closed to everyone but the workloads' clients (`network_policy.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.keda_http.install import ADDON

__all__ = ["ADDON"]
