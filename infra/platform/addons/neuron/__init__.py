"""The Neuron add-on: the official chart (device plugin, scheduler extension, node problem
detector; `install.py`) and AWS's neuron-monitor DaemonSet (`monitor.py`).

`ADDON` declares when it is installed, how it is built and its relations to the others
(infra/platform/addons/registry.py)."""

from infra.platform.addons.neuron.install import ADDON

__all__ = ["ADDON"]
