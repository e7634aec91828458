"""Entry point of the test-only platform plugin (see ../pyproject.toml).

vLLM calls `register()` while it resolves `current_platform`; the returned qualified class name
becomes the platform. A release that still ships vLLM's own Neuron platform (0.9.x, the base of
the Neuron fork) gets that one, so its Neuron-specific config rules apply; later releases (the
Neuron plugin's base, 0.24) get a minimal CPU-typed platform that only lets the parser build.
"""

from __future__ import annotations

import importlib.util


def register() -> str:
    if importlib.util.find_spec("vllm.platforms.neuron") is not None:
        return "vllm.platforms.neuron.NeuronPlatform"
    return "trnspec_parse_platform.platform.ParseOnlyPlatform"
