"""Which calibrated serving stack (trnspec/data/trn2_published.yaml `stack_group`) a config
runs as, read from the command `render` gives it: the one the deployment runs.

* `nxdi-fork`: the Neuron fork image (NxD Inference under vLLM's V0 engine).
* `plugin-sync`: the vLLM Neuron plugin with `--no-async-scheduling` in its argv (the DFlash
  command does, as AWS's DFlash examples, whose published runs calibrate this floor).
* `plugin`: the plugin with vLLM's default (async) scheduling, as its EAGLE3 tutorial runs it.
"""

from __future__ import annotations

from trnspec.config import ServingConfig
from trnspec.images import ImageGeneration
from trnspec.render import render

SYNC_FLAG = "--no-async-scheduling"


def stack_group(cfg: ServingConfig) -> str | None:
    """The stack group of `cfg`'s rendered command, or None for an image no Trn2 row covers."""
    image = ImageGeneration(cfg.image)
    if image is ImageGeneration.NEURON_FORK:
        return "nxdi-fork"
    if image is ImageGeneration.NEURON_PLUGIN:
        return "plugin-sync" if SYNC_FLAG in render(cfg).argv else "plugin"
    return None
